// Calico's selector language as policies write it, against label maps, with the result Calico
// gives for each; the canonical text; errors with their positions; and Kubernetes
// LabelSelectors converted into the same language.
import assert from 'node:assert/strict';
import {
  canonicalSelector,
  labelSelectorToCalico,
  type LabelSelector,
  matchLabelSelector,
  parseSelector,
  parseSelectorAst,
  SelectorError,
  selectorUsesGlobal,
} from '../../../lib/resources/index.js';

const WEB = { app: 'web', tier: 'front', 'k8s.io/role': 'server-01', env: '' };
const DB = { app: 'db', tier: 'back' };
const NONE = {};
const MAPS = { WEB, DB, NONE } as const;

// selector, then whether it matches WEB, DB and NONE.
const TABLE: [string, boolean, boolean, boolean][] = [
  ['', true, true, true],
  ['all()', true, true, true],
  ['has(app)', true, true, false],
  ['!has(app)', false, false, true],
  ['has(env)', true, false, false],
  ["app == 'web'", true, false, false],
  ['app == "web"', true, false, false],
  ["env == ''", true, false, false],
  ["app != 'web'", false, true, true],
  ["app in {'web', 'db'}", true, true, false],
  ["app in {'web',}", true, false, false],
  ['app in {}', false, false, false],
  ["app not in {'web'}", false, true, true],
  ['app not in {}', true, true, true],
  ["app contains 'e'", true, false, false],
  ["tier starts with 'fr'", true, false, false],
  ["tier ends with 'ck'", false, true, false],
  ["k8s.io/role starts with 'server-'", true, false, false],
  ["missing contains ''", false, false, false],
  ["missing starts with ''", false, false, false],
  ["app == 'web' && tier == 'front'", true, false, false],
  ["app == 'web' && tier == 'back'", false, false, false],
  ["app == 'web' || tier == 'back'", true, true, false],
  // && binds tighter than ||.
  ["app == 'db' || app == 'web' && tier == 'back'", false, true, false],
  ["(app == 'db' || app == 'web') && tier == 'back'", false, true, false],
  ["!(app == 'web')", false, true, true],
  ["!app == 'web'", false, true, true],
  ['!!has(app)', true, true, false],
  ["!has(app) || app != 'db'", true, false, true],
  ["  has( app )&&app=='web'  ", true, false, false],
  // Words that are operators elsewhere are plain label names before an operator.
  ["in == 'x' || all == 'y' || has == 'z'", false, false, false],
];

describe("resources: Calico's selector language", () => {
  it('matches every label map as Calico does (missing labels: ==, in, contains… false; !=, not in true)', () => {
    const wrong: string[] = [];
    for (const [text, ...want] of TABLE) {
      const sel = parseSelector(text);
      const got = Object.values(MAPS).map((m) => sel(m));
      if (got.join() !== want.join()) wrong.push(`${JSON.stringify(text)}: got ${got.join(',')}, want ${want.join(',')}`);
      // The canonical text means the same thing and is a fixed point.
      const canon = canonicalSelector(text);
      assert.deepEqual(
        Object.values(MAPS).map((m) => parseSelector(canon)(m)),
        got,
        `canonical ${canon}`,
      );
      assert.equal(canonicalSelector(canon), canon);
    }
    assert.deepEqual(wrong, []);
  });

  it('prints one canonical text for equal selectors: sets sorted, groups in parentheses', () => {
    assert.equal(canonicalSelector("b in {'y','x','y'} && a == 'v'"), 'b in {"x", "y"} && a == "v"');
    assert.equal(canonicalSelector("a == 'x' && (b == 'y' || !has(c))"), 'a == "x" && (b == "y" || !has(c))');
    assert.equal(canonicalSelector(''), 'all()');
    assert.equal(canonicalSelector(`a == '"q"'`), `a == '"q"'`);
    assert.equal(canonicalSelector("x starts with 'p'"), 'x starts with "p"');
  });

  it('global() only where a namespaceSelector may use it, and then matches no namespace', () => {
    assert.throws(() => parseSelector('global()'), /global\(\) is only allowed in a namespaceSelector at position 0/);
    const g = parseSelectorAst('global()', { allowGlobal: true });
    assert.equal(selectorUsesGlobal(g), true);
    assert.equal(parseSelector('global()', { allowGlobal: true })({ a: 'b' }), false);
    assert.equal(selectorUsesGlobal(parseSelectorAst("!has(a) || a == 'b'")), false);
  });

  it('refuses bad selectors, naming the position', () => {
    const cases: [string, RegExp][] = [
      ["app = 'web'", /expected an operator .* after 'app' at position 4/],
      ['app ==', /expected a quoted value at position 6/],
      ['app == web', /expected a quoted value at position 7/],
      ["app == 'web", /unterminated string at position 7/],
      ['has(app', /expected '\)' at position 7/],
      ['has()', /expected a label name in has\(\) at position 4/],
      ["(app == 'x'", /expected '\)' at position 11/],
      ["app == 'x' tier", /unexpected 't' at position 11/],
      ["app in {'a' 'b'}", /expected ',' or '}' at position 12/],
      ["app in 'a'", /expected '\{' at position 7/],
      ["app starts 'a'", /expected 'with' after 'starts' at position 11/],
      ["app not 'a'", /expected 'in' after 'not' at position 8/],
      ["app == 'a' &&", /unexpected end of selector at position 13/],
      ["app == 'a' & b", /unexpected '&' at position 11/],
      ['#', /expected a label name, all\(\), has\(\), ! or \( at position 0/],
    ];
    for (const [text, msg] of cases) {
      assert.throws(
        () => parseSelector(text),
        (e: unknown) => e instanceof SelectorError && msg.test(e.message) && typeof e.position === 'number',
        text,
      );
    }
  });
});

describe('resources: Kubernetes LabelSelector as a Calico selector', () => {
  const cases: [LabelSelector, string][] = [
    [{}, 'all()'],
    [{ matchLabels: {} }, 'all()'],
    [{ matchLabels: { b: '2', a: '1' } }, 'a == "1" && b == "2"'],
    [{ matchExpressions: [{ key: 'k', operator: 'In', values: ['y', 'x'] }] }, 'k in {"x", "y"}'],
    [{ matchExpressions: [{ key: 'k', operator: 'NotIn', values: ['x'] }] }, 'k not in {"x"}'],
    [{ matchExpressions: [{ key: 'k', operator: 'Exists' }] }, 'has(k)'],
    [{ matchExpressions: [{ key: 'k', operator: 'DoesNotExist' }] }, '!has(k)'],
    [
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
      'app == "web" && tier not in {"db"}',
    ],
  ];

  it('converts each form, canonically', () => {
    for (const [ls, text] of cases) assert.equal(labelSelectorToCalico(ls), text, JSON.stringify(ls));
  });

  it('matches as Kubernetes does (NotIn and DoesNotExist hold without the key), and as its Calico text does', () => {
    const maps: Record<string, string>[] = [{}, { k: 'x' }, { k: 'z' }, { app: 'web' }, { app: 'web', tier: 'db' }, { a: '1', b: '2' }];
    // Kubernetes' own rule, written out: every pair and every expression must hold.
    const k8s = (ls: LabelSelector, l: Record<string, string>): boolean =>
      Object.entries(ls.matchLabels ?? {}).every(([k, v]) => l[k] === v) &&
      (ls.matchExpressions ?? []).every((e) => {
        const present = Object.hasOwn(l, e.key);
        if (e.operator === 'In') return present && e.values!.includes(l[e.key]!);
        if (e.operator === 'NotIn') return !present || !e.values!.includes(l[e.key]!);
        if (e.operator === 'Exists') return present;
        return !present;
      });
    for (const [ls] of cases) {
      const m = matchLabelSelector(ls);
      const viaText = parseSelector(labelSelectorToCalico(ls));
      for (const l of maps) {
        assert.equal(m(l), k8s(ls, l), `${JSON.stringify(ls)} on ${JSON.stringify(l)}`);
        assert.equal(viaText(l), m(l));
      }
    }
  });
});
