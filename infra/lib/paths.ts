/**
 * Where the workflows' files are. The installed package (s3zip-cdk) ships them next to its compiled
 * code: dist/statemachine/*.asl.json and dist/functions/<name>/bootstrap (linux/arm64, as the
 * functions are declared). Run from this repository's source (infra/lib), they are the repository's
 * statemachine/ and the dist/functions that `make lambdas` builds.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** True in the installed package: its build copies statemachine/ next to the compiled code. */
const SHIPPED = fs.existsSync(path.join(__dirname, 'statemachine'));

/** Repository root (infra/lib -> ../..); unused by the installed package. */
const REPO_ROOT = path.resolve(__dirname, '..', '..');

const ASL_DIR = SHIPPED ? path.join(__dirname, 'statemachine') : path.join(REPO_ROOT, 'statemachine');

/** Folder holding <name>/bootstrap for each function: the package's own, or what `make lambdas` built. */
export const DEFAULT_FUNCTIONS_DIR = SHIPPED ? path.join(__dirname, 'functions') : path.join(REPO_ROOT, 'dist', 'functions');

/** statemachine/archive.asl.json: the create workflow's definition. */
export const ARCHIVE_ASL_PATH = path.join(ASL_DIR, 'archive.asl.json');

/** statemachine/extract.asl.json: plain JSON, its only placeholders quoted strings. */
export const EXTRACT_ASL_PATH = path.join(ASL_DIR, 'extract.asl.json');
