// The only way the page makes elements: tags and attributes it chose, and text through
// textContent. Names, labels and flow fields are data from the cluster; they never become markup.

type Child = Node | string | number | null | undefined | false;

function append(parent: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** An HTML element; `cls` its class, `title` a tooltip (as text). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { cls?: string; title?: string } = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (props.cls) e.className = props.cls;
  if (props.title !== undefined) e.title = props.title;
  append(e, children);
  return e;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element; attribute values are the page's own numbers and class names. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  append(e, children);
  return e;
}

/** A table row of text cells. */
export function row(cells: readonly (Child | HTMLTableCellElement)[]): HTMLTableRowElement {
  const tr = document.createElement('tr');
  for (const c of cells) tr.appendChild(c instanceof HTMLTableCellElement ? c : el('td', {}, c));
  return tr;
}

/** Replaces a table body's rows. */
export function fillBody(table: string, rows: readonly HTMLTableRowElement[]): void {
  const body = byId<HTMLTableElement>(table).tBodies[0]!;
  body.replaceChildren(...rows);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e as T;
}

/** Sets an element's text. */
export function say(id: string, text: string): void {
  byId(id).textContent = text;
}
