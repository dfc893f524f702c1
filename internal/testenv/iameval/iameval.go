// Package iameval decides whether an IAM identity policy allows a request,
// for tests that check every call a deployed function makes against the role
// the template gives it. No maintained Go evaluator exists; this one is small
// and implements exactly these rules of the AWS policy evaluation logic for a
// single account with identity policies only (no SCPs, boundaries, sessions):
//
//   - an explicit Deny in any matching statement wins;
//   - otherwise any matching Allow allows; otherwise the request is denied
//     implicitly;
//   - a statement matches when its Action (or NotAction) and Resource (or
//     NotResource) match and every condition in it holds;
//   - Action patterns match case-insensitively, Resource patterns
//     case-sensitively, both with the wildcards * (any run) and ? (one char);
//   - condition operators StringEquals, StringNotEquals, StringLike,
//     StringNotLike, ArnEquals, ArnLike, Bool (and their …IfExists forms);
//     values of one key are ORed, keys and operators ANDed; a positive
//     operator on a key the request lacks does not hold, a negated one does.
//     Any other operator is an error, never a silent match.
package iameval

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Statement is one statement of a policy document.
type Statement struct {
	Sid         string
	Effect      string
	Action      []string
	NotAction   []string
	Resource    []string
	NotResource []string
	// Condition: operator → context key → values.
	Condition map[string]map[string][]string
}

// Policy is a named list of statements (e.g. a role's inline policy).
type Policy struct {
	Name       string
	Statements []Statement
}

// Request is one authorization: an action on a resource with context keys.
type Request struct {
	Action   string              // e.g. s3:GetObject
	Resource string              // e.g. arn:aws:s3:::bucket/key
	Context  map[string][]string // condition keys, e.g. s3:prefix
}

func (r Request) String() string { return r.Action + " on " + r.Resource }

// Decision is the outcome of Evaluate.
type Decision struct {
	Allowed bool
	// Statement names the statement that decided ("policy/sid"): the first
	// Allow that allowed, or the explicit Deny.
	Statement string
	// AllowedBy lists every Allow statement that matched (to measure which
	// grants are used).
	AllowedBy []string
	// ExplicitDeny is set when a Deny statement matched.
	ExplicitDeny bool
}

// Evaluate applies the rules in the package comment.
func Evaluate(policies []Policy, r Request) (Decision, error) {
	var allow []string
	for _, p := range policies {
		for i, s := range p.Statements {
			ok, err := s.matches(r)
			if err != nil {
				return Decision{}, fmt.Errorf("policy %s statement %s: %w", p.Name, s.name(i), err)
			}
			if !ok {
				continue
			}
			switch s.Effect {
			case "Deny":
				return Decision{Statement: p.Name + "/" + s.name(i), ExplicitDeny: true}, nil
			case "Allow":
				allow = append(allow, p.Name+"/"+s.name(i))
			default:
				return Decision{}, fmt.Errorf("policy %s statement %s: Effect %q is neither Allow nor Deny", p.Name, s.name(i), s.Effect)
			}
		}
	}
	if len(allow) == 0 {
		return Decision{}, nil
	}
	return Decision{Allowed: true, Statement: allow[0], AllowedBy: allow}, nil
}

func (s Statement) name(i int) string {
	if s.Sid != "" {
		return s.Sid
	}
	return fmt.Sprintf("#%d", i)
}

func (s Statement) matches(r Request) (bool, error) {
	switch {
	case len(s.Action) > 0 && !anyMatch(s.Action, r.Action, true):
		return false, nil
	case len(s.NotAction) > 0 && anyMatch(s.NotAction, r.Action, true):
		return false, nil
	case len(s.Resource) > 0 && !anyMatch(s.Resource, r.Resource, false):
		return false, nil
	case len(s.NotResource) > 0 && anyMatch(s.NotResource, r.Resource, false):
		return false, nil
	}
	for op, keys := range s.Condition {
		for key, values := range keys {
			ok, err := condition(op, r.Context[key], hasKey(r.Context, key), values)
			if err != nil {
				return false, fmt.Errorf("condition %s %s: %w", op, key, err)
			}
			if !ok {
				return false, nil
			}
		}
	}
	return true, nil
}

func hasKey(ctx map[string][]string, key string) bool { _, ok := ctx[key]; return ok }

func anyMatch(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			if Like(strings.ToLower(p), strings.ToLower(s)) {
				return true
			}
		} else if Like(p, s) {
			return true
		}
	}
	return false
}

func condition(op string, got []string, present bool, want []string) (bool, error) {
	base, ifExists := strings.CutSuffix(op, "IfExists")
	if !present && ifExists {
		return true, nil
	}
	var match func(pattern, value string) bool
	negated := false
	switch base {
	case "StringEquals", "ArnEquals":
		match = func(p, v string) bool { return p == v }
	case "StringNotEquals":
		match, negated = func(p, v string) bool { return p == v }, true
	case "StringLike", "ArnLike":
		match = Like
	case "StringNotLike":
		match, negated = Like, true
	case "Bool":
		match = func(p, v string) bool { return strings.EqualFold(p, v) }
	default:
		return false, fmt.Errorf("operator %s is not implemented by this evaluator", op)
	}
	if !present {
		return negated, nil
	}
	// Multi-valued request keys are not used by S3's s3:prefix and friends:
	// each value is tested on its own, any match counts.
	any := false
	for _, g := range got {
		for _, w := range want {
			if match(w, g) {
				any = true
			}
		}
	}
	return any != negated, nil
}

// Like matches s against an IAM pattern with * (any run, also empty) and ?
// (exactly one character).
func Like(pattern, s string) bool {
	p, v := []rune(pattern), []rune(s)
	// Iterative wildcard match with backtracking to the last star.
	pi, vi, star, mark := 0, 0, -1, 0
	for vi < len(v) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == v[vi]):
			pi++
			vi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, vi
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			vi = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// ParseDocument reads a policy document (Statement as one object or a list;
// Action/Resource and condition values as a string or a list).
func ParseDocument(name string, doc []byte) (Policy, error) {
	var raw struct {
		Statement json.RawMessage
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", name, err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw.Statement, &list); err != nil {
		list = []json.RawMessage{raw.Statement}
	}
	p := Policy{Name: name}
	for i, r := range list {
		var s struct {
			Sid, Effect                              string
			Action, NotAction, Resource, NotResource stringList
			Condition                                map[string]map[string]stringList
		}
		if err := json.Unmarshal(r, &s); err != nil {
			return Policy{}, fmt.Errorf("policy %s statement %d: %w", name, i, err)
		}
		st := Statement{Sid: s.Sid, Effect: s.Effect, Action: s.Action, NotAction: s.NotAction, Resource: s.Resource, NotResource: s.NotResource}
		if len(s.Condition) > 0 {
			st.Condition = map[string]map[string][]string{}
			for op, keys := range s.Condition {
				st.Condition[op] = map[string][]string{}
				for k, v := range keys {
					st.Condition[op][k] = v
				}
			}
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

// stringList is a JSON string or list of strings (booleans as their text).
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one any
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	switch v := one.(type) {
	case string:
		*l = []string{v}
	case bool:
		*l = []string{fmt.Sprint(v)}
	case []any:
		for _, e := range v {
			switch e := e.(type) {
			case string:
				*l = append(*l, e)
			case bool:
				*l = append(*l, fmt.Sprint(e))
			default:
				return fmt.Errorf("policy value %v is not a string", e)
			}
		}
	default:
		return fmt.Errorf("policy value %s is not a string or a list of strings", b)
	}
	return nil
}
