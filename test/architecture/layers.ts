// Who may import whom: the layering of docs/ARCHITECTURE.md as data, and a checker that reads
// every import of the source tree. The table is the rule; the test only enforces it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/**
 * Each layer (a folder, or a folder inside `lib/`) and the layers it may import besides itself.
 * A file belongs to the longest layer prefix of its path. Folders not listed (test/, bench/,
 * examples/, containerlab/, the root index.ts) may import anything.
 */
export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  ip: [],
  // BFD (RFC 5880) stands alone below the speaker: a library user may run it for anything.
  'bgp/bfd': ['ip'],
  bgp: ['bgp/bfd', 'ip'],
  reflector: ['bgp', 'ip'],
  felix: ['ip'],
  'lib/resources': ['ip'],
  'lib/datastore': ['lib/resources', 'ip'],
  'lib/ipam': ['lib/files', 'lib/datastore', 'lib/resources', 'ip'],
  'lib/policy': ['lib/resources', 'felix', 'ip'],
  'lib/services': ['lib/datastore', 'lib/resources', 'felix', 'ip'],
  // Levelled logs, a leaf every daemon shares.
  'lib/log': [],
  // Folders and files kept from other users whatever the umask, a leaf every daemon shares.
  'lib/files': [],
  // lib/resources: its "did you mean" (suggest.ts), so a misspelt field in a daemon's file is
  // answered as one in a resource is.
  'lib/bgpd': ['lib/log', 'lib/files', 'lib/resources', 'bgp', 'reflector', 'ip'],
  // lib/cni: the agent runs the plugin's calls for the CNI shim (cni-server.ts); lib/bgpd: its
  // socket rules (control-socket.ts) for that socket.
  'lib/agent': [
    'lib/log',
    'lib/files',
    'lib/bgpd',
    'lib/cni',
    'lib/ipam',
    'lib/policy',
    'lib/services',
    'lib/datastore',
    'lib/resources',
    'bgp',
    'reflector',
    'felix',
    'ip',
  ],
  'lib/cni': ['lib/files', 'lib/ipam', 'lib/datastore', 'lib/resources', 'felix', 'ip'],
  'lib/lab': ['lib/agent', 'lib/bgpd', 'lib/datastore', 'lib/resources', 'ip'],
  'lib/demo': ['lib/agent', 'lib/cni', 'lib/ipam', 'lib/datastore', 'lib/resources', 'bgp', 'felix', 'ip'],
  'lib/cli': [
    'lib/log',
    'lib/demo',
    'lib/lab',
    'lib/agent',
    'lib/cni',
    'lib/bgpd',
    'lib/ipam',
    'lib/policy',
    'lib/services',
    'lib/datastore',
    'lib/resources',
    'bgp',
    'reflector',
    'felix',
    'ip',
  ],
};

/**
 * Layers that other code reaches only through their face, `<layer>/index.ts`; inside the layer,
 * files import each other directly.
 */
export const FACES: readonly string[] = ['lib/resources', 'lib/datastore'];

export interface ImportEdge {
  /** The importing file, relative to the root, with forward slashes. */
  file: string;
  line: number;
  /** The specifier as written. */
  specifier: string;
  /** The imported file, relative to the root. */
  target: string;
}

export interface Violation extends ImportEdge {
  from: string;
  to: string;
}

const toPosix = (p: string) => p.split(sep).join('/');

/** The layer a root-relative path belongs to, or undefined when it is in none. */
export function layerOf(path: string, layers: Readonly<Record<string, readonly string[]>> = LAYERS): string | undefined {
  let best: string | undefined;
  for (const l of Object.keys(layers)) {
    if ((path === l || path.startsWith(`${l}/`)) && (!best || l.length > best.length)) best = l;
  }
  return best;
}

// Static imports and re-exports (`import … from`, `export … from`, `import '…'`) and dynamic
// `import('…')`: everything that makes one file load another.
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(['"])([^'"]+)\1/gm;

/** The relative imports of one file's text. */
export function importsOf(file: string, text: string): ImportEdge[] {
  const out: ImportEdge[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const specifier = m[2];
    if (!specifier.startsWith('.')) continue;
    const line = text.slice(0, m.index).split('\n').length;
    out.push({ file, line, specifier, target: toPosix(normalize(join(dirname(file), specifier))) });
  }
  return out;
}

/** The imports that cross from one layer into a layer it may not use. */
export function violations(edges: readonly ImportEdge[], layers: Readonly<Record<string, readonly string[]>> = LAYERS): Violation[] {
  const out: Violation[] = [];
  for (const e of edges) {
    const from = layerOf(e.file, layers);
    if (from === undefined) continue;
    const to = layerOf(e.target, layers) ?? e.target;
    if (to === from || layers[from].includes(to)) continue;
    out.push({ ...e, from, to });
  }
  return out;
}

/** The imports from outside a faced layer that reach past its index into one of its files. */
export function faceViolations(edges: readonly ImportEdge[], faces: readonly string[] = FACES): ImportEdge[] {
  return edges.filter((e) =>
    faces.some((f) => e.target.startsWith(`${f}/`) && !e.file.startsWith(`${f}/`) && e.target !== `${f}/index.js`),
  );
}

/** Every .ts file under the root's layer folders, as root-relative paths. */
export function sourceFiles(root: string, layers: Readonly<Record<string, readonly string[]>> = LAYERS): string[] {
  const tops = new Set(Object.keys(layers).map((l) => l.split('/')[0]));
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(toPosix(relative(root, p)));
    }
  };
  for (const t of tops) {
    try {
      walk(join(root, t));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  return out.sort();
}

/** Every relative import of the tree's layer folders. */
export function treeImports(root: string): ImportEdge[] {
  return sourceFiles(root).flatMap((f) => importsOf(f, readFileSync(join(root, f), 'utf8')));
}
