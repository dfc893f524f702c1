/**
 * `npm run validate-asl`: renders statemachine/archive.asl.json with realistic values (as
 * CloudFormation would) and checks it with asl-validator. Exit 1 when invalid.
 */
import aslValidator from 'asl-validator';
import { renderDefinition } from '../../infra/lib/asl';
import { ARCHIVE_ASL_PATH } from '../../infra/lib/paths';
import { REALISTIC_SUBSTITUTIONS } from './fixtures';

let exitCode = 0;
for (const MapExecutionType of ['STANDARD', 'EXPRESS']) {
  const definition = renderDefinition({ ...REALISTIC_SUBSTITUTIONS, MapExecutionType });
  const result = aslValidator(definition, { checkPaths: true, checkArn: true });
  if (result.isValid) {
    console.log(`ok: ${ARCHIVE_ASL_PATH} (MapExecutionType=${MapExecutionType})`);
  } else {
    console.error(`invalid: ${ARCHIVE_ASL_PATH} (MapExecutionType=${MapExecutionType})\n${result.errorsText('\n')}`);
    exitCode = 1;
  }
}
process.exit(exitCode);
