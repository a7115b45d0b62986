// `podroute node drain <node>` / `undrain`: the Node's drain annotation in the store, which the
// node's agent follows; a Node that does not exist is named and nothing is written.
import assert from 'node:assert/strict';
import { dispatch } from '../../../lib/cli/args.js';
import { nodeDrainCommands } from '../../../lib/cli/datastore.js';
import { memoryDatastore } from '../../../lib/datastore/index.js';
import { DRAIN_ANNOTATION, validateResource } from '../../../lib/resources/index.js';

describe('podroute node drain / undrain', () => {
  it('drain sets the annotation with the time, undrain removes it, other annotations stay', async () => {
    const ds = memoryDatastore();
    await ds.create(
      validateResource({
        apiVersion: 'projectcalico.org/v3',
        kind: 'Node',
        metadata: { name: 'n1', annotations: { keep: 'me' } },
        spec: { bgp: { ipv4Address: '10.0.0.1/24' } },
      }),
    );
    const out: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s) };
    const root = { name: 'node', summary: '', subcommands: nodeDrainCommands(io, ds) };
    assert.equal(await dispatch(root, ['drain', 'n1'], io), 0, out.join(''));
    const drained = await ds.get('Node', 'n1');
    assert.ok(!Number.isNaN(Date.parse(drained!.metadata.annotations?.[DRAIN_ANNOTATION] ?? '')), 'no time in the drain annotation');
    assert.equal(drained!.metadata.annotations?.keep, 'me');
    assert.match(out.join(''), /Node n1: draining/);
    assert.equal(await dispatch(root, ['undrain', 'n1'], io), 0);
    assert.deepEqual((await ds.get('Node', 'n1'))!.metadata.annotations, { keep: 'me' });
  });

  it('a Node that does not exist is named, exit 1', async () => {
    const ds = memoryDatastore();
    const err: string[] = [];
    const io = { stdout: () => undefined, stderr: (s: string) => err.push(s) };
    const root = { name: 'node', summary: '', subcommands: nodeDrainCommands(io, ds) };
    assert.equal(await dispatch(root, ['drain', 'nope'], io), 1);
    assert.match(err.join(''), /podroute node drain: Node "nope" does not exist/);
  });
});
