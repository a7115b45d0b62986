// The layering of docs/ARCHITECTURE.md, checked on the real tree: a forbidden import fails here,
// naming the file, the line and the rule it breaks.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { faceViolations, importsOf, LAYERS, layerOf, sourceFiles, treeImports, violations } from './layers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('architecture: who may import whom', () => {
  it('no file imports a layer its own layer may not use', () => {
    const bad = violations(treeImports(root));
    const lines = bad.map((v) => `${v.file}:${v.line} imports ${v.specifier} (${v.from} may not import ${v.to})`);
    assert.deepEqual(lines, []);
  });

  it('outside lib/resources and lib/datastore, code imports their index, not their files', () => {
    const bad = faceViolations(treeImports(root));
    assert.deepEqual(
      bad.map((e) => `${e.file}:${e.line} imports ${e.specifier} (import the folder's index.js)`),
      [],
    );
  });

  it('the face check: past the index from outside is caught, inside the folder and through the index are not', () => {
    const edges = [
      ...importsOf('lib/agent/peers.ts', "import { parsePeerIP } from '../resources/peer-ip.js';"),
      ...importsOf('lib/cni/plugin.ts', "import { openDatastore } from '../datastore/open.js';"),
      ...importsOf('lib/agent/peers.ts', "import { parsePeerIP } from '../resources/index.js';"),
      ...importsOf('lib/datastore/codec.ts', "import { normalizeBlockSpec } from '../resources/index.js';"),
      ...importsOf('lib/datastore/file.ts', "import { MemoryBackend } from './memory.js';"),
      ...importsOf('lib/ipam/ipam.ts', "import { parseCidr } from '../../ip/cidr.js';"),
    ];
    assert.deepEqual(
      faceViolations(edges).map((e) => e.target),
      ['lib/resources/peer-ip.js', 'lib/datastore/open.js'],
    );
  });

  it('the layers form no cycle', () => {
    const seen = new Map<string, 'open' | 'done'>();
    const visit = (l: string, path: string[]): void => {
      if (seen.get(l) === 'done') return;
      assert.notEqual(seen.get(l), 'open', `cycle: ${[...path, l].join(' -> ')}`);
      seen.set(l, 'open');
      for (const d of LAYERS[l] ?? []) visit(d, [...path, l]);
      seen.set(l, 'done');
    };
    for (const l of Object.keys(LAYERS)) visit(l, []);
  });

  it('every layer the table names exists, and the checker sees its files', () => {
    const files = sourceFiles(root);
    for (const l of Object.keys(LAYERS)) {
      assert.ok(existsSync(`${root}/${l}`), `${l} is in the table but not in the tree`);
      assert.ok(
        files.some((f) => layerOf(f) === l),
        `no .ts file found in ${l}`,
      );
    }
  });

  it('the checker catches what it should: static, re-export, side-effect and dynamic imports', () => {
    const text = [
      "import { BgpSpeaker } from '../bgp/index.js';",
      "export { Ipam } from '../lib/ipam/index.js';",
      "import '../lib/agent/agent.js';",
      "const m = await import('../lib/cli/main.js');",
      "import { x } from './model.js';",
      "import http from 'node:http';",
    ].join('\n');
    const edges = importsOf('felix/felix.ts', text);
    assert.deepEqual(
      edges.map((e) => [e.line, e.target]),
      [
        [1, 'bgp/index.js'],
        [2, 'lib/ipam/index.js'],
        [3, 'lib/agent/agent.js'],
        [4, 'lib/cli/main.js'],
        [5, 'felix/model.js'],
      ],
    );
    assert.deepEqual(
      violations(edges).map((v) => `${v.line} ${v.to}`),
      ['1 bgp', '2 lib/ipam', '3 lib/agent', '4 lib/cli'],
    );
  });

  it('a file belongs to its longest layer, and folders outside the table are free', () => {
    assert.equal(layerOf('lib/ipam/ipam.ts'), 'lib/ipam');
    assert.equal(layerOf('bgp/codec/nlri.ts'), 'bgp');
    assert.equal(layerOf('test/smoke.test.ts'), undefined);
    assert.equal(layerOf('libx/a.ts'), undefined);
    assert.deepEqual(violations(importsOf('test/x.test.ts', "import { a } from '../lib/cli/main.js';")), []);
  });
});
