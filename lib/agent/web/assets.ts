// What the web server sends besides its documents: the page, its style sheet and icon (here as
// text, so the compiled package needs no copy step), and the page's scripts. A checkout has
// them as TypeScript in page/ and compiles them once at start (esbuild, a dev dependency); an
// installed package has tsc's JavaScript beside them in dist/.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>podroute node</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/style.css">
<script type="module" src="/app.js"></script>
</head>
<body>
<header>
  <h1>podroute <span id="node-name">…</span></h1>
  <p id="node-facts"></p>
  <p id="problem" class="problem" hidden></p>
</header>
<main>
  <section id="sessions-section">
    <h2>BGP sessions</h2>
    <table id="sessions"><thead><tr>
      <th>peer</th><th>AS</th><th>type</th><th>source</th><th>state</th><th>up</th><th>prefixes received</th><th>prefixes sent</th><th>info</th>
    </tr></thead><tbody></tbody></table>
  </section>
  <section id="cluster-section">
    <h2>Cluster</h2>
    <p class="legend" id="cluster-legend"></p>
    <div id="cluster"></div>
    <p id="cluster-partial" class="note" hidden></p>
    <table id="nodes"><thead><tr><th>node</th><th>role</th><th>address</th><th>AS</th><th>labels</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="routes-section">
    <h2>Routes</h2>
    <h3>BGP (Loc-RIB)</h3>
    <p id="bgp-routes-note" class="note"></p>
    <table id="bgp-routes"><thead><tr><th>prefix</th><th>next hop</th><th>from</th><th>AS path</th><th>stale</th></tr></thead><tbody></tbody></table>
    <h3>Programmed (ip route)</h3>
    <p id="programmed-note" class="note"></p>
    <ul id="programmed" class="plain"></ul>
    <div id="unresolved-block" hidden>
      <h3>Not programmed</h3>
      <table id="unresolved"><thead><tr><th>destination</th><th>why</th></tr></thead><tbody></tbody></table>
    </div>
  </section>
  <section id="flows-section">
    <h2>Flows</h2>
    <form id="flow-filters">
      <label>namespace <input name="namespace" autocomplete="off" spellcheck="false"></label>
      <label>pod <input name="pod" autocomplete="off" spellcheck="false"></label>
      <label>verdict <select name="verdict"><option value="">any</option><option value="allow">allow</option><option value="deny">deny</option></select></label>
    </form>
    <p id="flows-status" class="note"></p>
    <table id="flows"><thead><tr>
      <th>time</th><th>source</th><th>destination</th><th>proto</th><th>verdict</th><th>policy</th><th>staged</th><th>bytes</th><th>packets</th><th>count</th>
    </tr></thead><tbody></tbody></table>
  </section>
</main>
<footer><p>Read-only: this page changes nothing on the node.</p></footer>
</body>
</html>
`;

export const STYLE_CSS = `:root { color-scheme: light dark; --ok: #1a7f37; --warn: #bf8700; --bad: #cf222e; --idle: #6e7781; --line: #d0d7de; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; }
h1 { font-size: 1.4rem; margin: 1rem 0 0.2rem; }
h2 { font-size: 1.15rem; margin: 1.6rem 0 0.4rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1rem 0 0.3rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 0.15rem 0.6rem 0.15rem 0; vertical-align: top; }
th { font-weight: 600; border-bottom: 1px solid var(--line); }
td.mono, li.mono, .mono { font-family: ui-monospace, monospace; }
.note { color: var(--idle); margin: 0.2rem 0; }
.problem { color: var(--bad); font-weight: 600; }
.plain { list-style: none; padding: 0; margin: 0; }
.state-established { color: var(--ok); font-weight: 600; }
.state-opening { color: var(--warn); font-weight: 600; }
.state-down { color: var(--bad); font-weight: 600; }
.verdict-allow { color: var(--ok); }
.verdict-deny { color: var(--bad); font-weight: 600; }
.label { display: inline-block; border: 1px solid var(--line); border-radius: 3px; padding: 0 0.3rem; margin: 0 0.2rem 0.1rem 0; font-family: ui-monospace, monospace; font-size: 12px; }
form label { margin-right: 1rem; }
#cluster svg { max-width: 100%; height: auto; border: 1px solid var(--line); }
svg .box { fill: Canvas; stroke: CanvasText; stroke-width: 1; }
svg .box.self { stroke-width: 3; }
svg .box.reflector { fill: #ddf4ff; }
svg .box.tor, svg .box.router { fill: #fff8c5; }
svg text { fill: CanvasText; font: 12px system-ui, sans-serif; }
svg text.small { font-size: 10px; fill: var(--idle); }
svg path.session { stroke-width: 2; fill: none; }
svg path.state-established { stroke: var(--ok); }
svg path.state-opening { stroke: var(--warn); }
svg path.state-down { stroke: var(--bad); }
svg path.state-unknown { stroke: var(--idle); stroke-dasharray: 4 3; stroke-width: 1; }
.legend span { margin-right: 1rem; }
footer { margin-top: 2rem; color: var(--idle); }
`;

export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="4" cy="8" r="3" fill="#1a7f37"/><circle cx="12" cy="8" r="3" fill="#1a7f37"/><line x1="4" y1="8" x2="12" y2="8" stroke="#1a7f37" stroke-width="2"/></svg>`;

/**
 * The page's scripts by URL path ("/app.js"): the compiled ones beside this file when there are
 * (an installed package), else the TypeScript sources compiled now (a checkout).
 */
export async function pageScripts(): Promise<Map<string, string>> {
  const dir = fileURLToPath(new URL('./page/', import.meta.url));
  const files = readdirSync(dir);
  const out = new Map<string, string>();
  const sources = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  const compiled = files.filter((f) => f.endsWith('.js'));
  if (compiled.length > 0 && sources.length === 0) {
    for (const f of compiled) out.set(`/${f}`, readFileSync(`${dir}${f}`, 'utf8'));
    return out;
  }
  // The bare name keeps tsc and the package's bundler from following it: only a checkout runs this.
  const esbuild = 'esbuild';
  const { transform } = (await import(esbuild)) as typeof import('esbuild');
  for (const f of sources) {
    const { code } = await transform(readFileSync(`${dir}${f}`, 'utf8'), { loader: 'ts', format: 'esm', target: 'es2022', sourcefile: f });
    out.set(`/${f.slice(0, -3)}.js`, code);
  }
  return out;
}
