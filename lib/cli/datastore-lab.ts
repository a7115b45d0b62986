// The datastore commands and the labs on this host: `--lab NAME` opens that lab's datastore,
// and a write that goes to the local file datastore while a lab is up says so, since no lab
// agent reads that file.
import { labDatastore, labsUp, readState, stateRoot } from '../lab/index.js';
import { UsageError, type OptionSpec } from './args.js';

export const LAB_FLAG: OptionSpec = {
  type: 'string',
  value: '<lab>',
  help: 'the datastore of a lab up on this host (podroute lab env <lab> exports it for every command)',
};

/** The `--datastore` value that `--lab NAME` stands for. */
export function labDatastoreFlag(lab: string, datastore: unknown): string {
  if (datastore !== undefined) throw new UsageError('--lab and --datastore: give one of them');
  const state = readState(stateRoot(), lab);
  if (!state) throw new UsageError(`--lab: no lab ${JSON.stringify(lab)} is up${listed(labsUp())}`);
  const ds = labDatastore(state);
  if (!ds) throw new UsageError(`--lab: lab ${lab} runs no datastore`);
  return ds.flag;
}

const listed = (labs: string[]) => (labs.length ? ` (up: ${labs.join(', ')})` : '');

/** The warning for a write to the file datastore `file`, or undefined when no lab is up. */
export function fileStoreWarning(command: string, file: string): string | undefined {
  const labs = labsUp();
  if (labs.length === 0) return undefined;
  const lab = labs.length === 1 ? labs[0]! : '<lab>';
  return (
    `podroute ${command}: warning: this goes to the local file datastore ${file}, which no lab reads; ` +
    `lab ${labs.join(', ')} ${labs.length === 1 ? 'is' : 'are'} up: podroute ${command} --lab ${lab} ..., ` +
    `or eval "$(podroute lab env ${lab})" first\n`
  );
}
