// The whole `podroute` command tree, walked from its root: every command and subcommand answers
// --help and -h with its usage and every flag it declares, each with a description, and refuses
// a flag it does not know by name. Run in-process through the same dispatch bin/podroute.js uses
// (test/cli runs the bin itself).
import assert from 'node:assert/strict';
import { dispatch, parseFor, type CommandSpec } from '../../../lib/cli/args.js';
import { ROOT } from '../../../lib/cli/commands.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function podroute(argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await dispatch(ROOT, argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
  return { code, stdout, stderr };
}

/** Every command of the tree with the words that name it, the root first. */
function commands(spec: CommandSpec, path: string[] = []): { path: string[]; spec: CommandSpec }[] {
  return [{ path, spec }, ...(spec.subcommands ?? []).flatMap((s) => commands(s, [...path, s.name]))];
}

const ALL = commands(ROOT);

describe('the podroute command tree', () => {
  it('is walked whole: the commands of every area are in it', () => {
    const names = new Set(ALL.map((c) => c.path.join(' ')));
    for (const c of [
      'demo',
      'mrt',
      'bgpd neighbor',
      'reflector rib add',
      'apply',
      'get',
      'ipam show',
      'node run',
      'node status',
      'bgp routes',
      'policy verdict',
      'lab up',
      'lab exec',
      'lab pod label',
      'lab list',
      'completion',
    ])
      assert.ok(names.has(c), `${c} is not in the tree`);
  });

  for (const { path, spec } of ALL) {
    const name = ['podroute', ...path].join(' ');

    it(`${name}: --help and -h print its usage and every flag with its description`, async () => {
      for (const flag of ['--help', '-h']) {
        const r = await podroute([...path, flag]);
        assert.equal(r.code, 0, `${name} ${flag}: ${r.stderr}`);
        assert.equal(r.stderr, '');
        assert.ok(r.stdout.startsWith(`usage: ${name}`), `${name} ${flag} begins ${JSON.stringify(r.stdout.slice(0, 60))}`);
        assert.ok(r.stdout.includes(spec.summary), `${name} ${flag} lacks its summary`);
        for (const [flagName, o] of Object.entries(spec.options ?? {})) {
          assert.notEqual(o.help.trim(), '', `${name} --${flagName} has no description`);
          const line = r.stdout.split('\n').findIndex((l) => new RegExp(`(^|, )--${flagName}\\b`).test(l.trim()));
          assert.notEqual(line, -1, `${name} ${flag} does not list --${flagName}`);
          // The description is on the flag's line, or the next when the flag is too wide.
          const lines = r.stdout.split('\n');
          assert.ok(
            `${lines[line]}\n${lines[line + 1]}`.includes(o.help),
            `${name} ${flag}: --${flagName} is shown without its description`,
          );
        }
      }
    });

    it(`${name}: an unknown flag is refused by name, with a non-zero exit`, async () => {
      const r = await podroute([...path, '--no-such-flag']);
      assert.notEqual(r.code, 0);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, new RegExp(`^${name}: Unknown option '--no-such-flag'`));
    });
  }

  it('a misspelt flag is refused with the nearest one it may stand for', async () => {
    const r = await podroute(['get', 'ippool', '--namespce', 'x']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Unknown option '--namespce' \(did you mean --namespace\?\)/);
  });

  it("a value outside a flag's choices is refused naming the flag and the choices", async () => {
    const r = await podroute(['lab', 'up', 'x.clab.yml', '--runtime', 'podman']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^podroute lab up: --runtime "podman" must be one of netns, docker/);
  });

  it("lab exec: the words after <node> are the command, its flags unread (and -h there is the command's)", () => {
    const exec = ALL.find((c) => c.path.join(' ') === 'lab exec')!.spec;
    const p = parseFor(exec, ['podroute', 'lab', 'exec'], ['--state-dir', '/s', 'mesh', 'n1', 'ping', '-c', '1', '--state-dir', 'x', '-h']);
    assert.deepEqual(p.positionals, ['mesh', 'n1', 'ping', '-c', '1', '--state-dir', 'x', '-h']);
    assert.equal(p.values['state-dir'], '/s');
    assert.equal(p.values.help, undefined);
  });

  it('the root alone prints its help; -v the version', async () => {
    const bare = await podroute([]);
    assert.equal(bare.code, 0);
    assert.match(bare.stdout, /^usage: podroute/);
    assert.match((await podroute(['-v'])).stdout, /^podroute \d+\.\d+\.\d+\n$/);
  });
});
