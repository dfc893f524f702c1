// Package testenv holds what the tests (and the benchmarks) run against, kept
// apart from the code that ships in the Lambdas and the CLI: s3test starts
// versitygw on loopback, faultproxy injects S3 faults in front of it,
// zipcheck opens archives with real ZIP readers, iameval evaluates the
// deployed roles' policies, mapadapter is the S3 side of the Distributed Map
// adapter the local state machine runs. Nothing outside tests and bench/
// imports them.
package testenv
