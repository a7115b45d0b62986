// The field checks every validator shares: each failure is a ValidationError naming the field
// (spec.cidr, spec.ingress[0].from[1].ipBlock.except[0], ...) so a user finds the line in the YAML.
import {
  AddressError,
  checkedRouterId,
  cidrNetwork,
  formatCidr,
  parseAddress,
  parseCidr,
  type Cidr,
  type IpFamily,
} from '../../ip/index.js';
import { parseSelector, SelectorError, type SelectorOptions } from './selector.js';
import { closestName } from './suggest.js';

export class ValidationError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
    readonly resource?: string,
  ) {
    super(`${resource ? `${resource}: ` : ''}${field}: ${reason}`);
    this.name = 'ValidationError';
  }
}

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export class Checker {
  constructor(readonly where: string | undefined) {}
  fail(field: string, reason: string): never {
    throw new ValidationError(field, reason, this.where);
  }
  obj(v: unknown, field: string): Obj {
    if (!isObj(v)) this.fail(field, 'must be a mapping');
    return v;
  }
  str(o: Obj, k: string, path: string, required = false): string | undefined {
    const v = o[k];
    if (v === undefined || v === null) {
      if (required) this.fail(`${path}.${k}`, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') this.fail(`${path}.${k}`, `must be a string, not ${JSON.stringify(v)}`);
    if (required && v === '') this.fail(`${path}.${k}`, 'must not be empty');
    return v;
  }
  bool(o: Obj, k: string, path: string): boolean | undefined {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') this.fail(`${path}.${k}`, `must be true or false, not ${JSON.stringify(v)}`);
    return v;
  }
  /**
   * An integer in [min, max], written as a number: a quoted "26" is refused, as calicoctl's
   * strict decoding and the API server refuse a string for an integer field.
   */
  int(o: Obj, k: string, path: string, min: number, max: number, required = false): number | undefined {
    const v = o[k];
    if (v === undefined || v === null) {
      if (required) this.fail(`${path}.${k}`, 'is required');
      return undefined;
    }
    return this.num(v, `${path}.${k}`, min, max);
  }
  /**
   * An AS number: a number, or a string of one ("64512") or of asdot ("1.10", 1 * 65536 + 10),
   * both of which Calico's numorstring.ASNumber accepts.
   */
  asNumber(o: Obj, k: string, path: string, required = false): number | undefined {
    const v = o[k];
    if (v === undefined || v === null) {
      if (required) this.fail(`${path}.${k}`, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') return this.num(v, `${path}.${k}`, 1, 0xffffffff);
    const m = /^(\d+)(?:\.(\d+))?$/.exec(v);
    const [hi, lo] = m ? [Number(m[1]), m[2] === undefined ? undefined : Number(m[2])] : [Number.NaN, undefined];
    const n = lo === undefined ? hi : hi <= 0xffff && lo <= 0xffff ? hi * 65536 + lo : Number.NaN;
    if (!Number.isInteger(n) || n < 1 || n > 0xffffffff)
      this.fail(`${path}.${k}`, `must be an AS number from 1 to 4294967295 (or asdot, 0.1 to 65535.65535), not ${JSON.stringify(v)}`);
    return n;
  }
  cidr(v: unknown, field: string, strict = true): Cidr {
    const c = this.address(() => parseCidr(v as string, field, false), field, `${JSON.stringify(v)} is not a CIDR (address/prefix-length)`);
    // Host bits get their own message, with the network the user probably meant.
    const net = cidrNetwork(c);
    if (strict && net.bytes.some((b, i) => b !== c.bytes[i]))
      this.fail(field, `${String(v)} has host bits set; did you mean ${formatCidr(net)}?`);
    return c;
  }
  ip(v: unknown, field: string): IpFamily {
    return this.address(() => parseAddress(v as string, field), field, `${JSON.stringify(v)} is not an IP address`).family;
  }
  /** A router or cluster ID, refused in the one message ip/ gives for every identifier. */
  routerId(v: string, field: string): string {
    try {
      return checkedRouterId(v, field);
    } catch (e) {
      if (e instanceof AddressError) this.fail(field, `${JSON.stringify(e.value)} ${e.why}`);
      throw e;
    }
  }
  /** What `read` returns, or a failure with `reason` when ip/ refuses the value (a non-string too). */
  address<T>(read: () => T, field: string, reason: string): T {
    try {
      return read();
    } catch (e) {
      if (e instanceof AddressError) this.fail(field, reason);
      throw e;
    }
  }
  selector(o: Obj, k: string, path: string, options: SelectorOptions = {}): string | undefined {
    const s = this.str(o, k, path);
    if (s === undefined) return undefined;
    try {
      parseSelector(s, options);
    } catch (e) {
      if (e instanceof SelectorError) this.fail(`${path}.${k}`, `invalid selector: ${e.message}`);
      throw e;
    }
    return s;
  }
  oneOf<T extends string>(o: Obj, k: string, path: string, allowed: readonly T[], dflt: T): T {
    const v = o[k];
    if (v === undefined || v === null) return dflt;
    if (!allowed.includes(v as T)) this.fail(`${path}.${k}`, `must be one of ${allowed.join(', ')}, not ${JSON.stringify(v)}`);
    return v as T;
  }
  labels(o: Obj, k: string, path: string): Record<string, string> | undefined {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    const m = this.obj(v, `${path}.${k}`);
    for (const [lk, lv] of Object.entries(m)) {
      if (!/^([A-Za-z0-9.-]+\/)?[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/.test(lk))
        this.fail(`${path}.${k}`, `invalid label name ${JSON.stringify(lk)}`);
      if (typeof lv !== 'string') this.fail(`${path}.${k}.${lk}`, 'label values must be strings');
    }
    return m as Record<string, string>;
  }

  /** Refuses every field but `allowed`; `unsupported` gives known fields podroute refuses, with why. */
  only(o: Obj, allowed: readonly string[], path: string, unsupported: Readonly<Record<string, string>> = {}): void {
    for (const k of Object.keys(o)) {
      if (o[k] === undefined) continue;
      if (Object.hasOwn(unsupported, k)) this.fail(`${path}.${k}`, unsupported[k]!);
      if (!allowed.includes(k)) {
        const near = closestName(k, [...allowed, ...Object.keys(unsupported)]);
        const hint = near === undefined ? '' : `; did you mean ${near}?`;
        this.fail(`${path}.${k}`, `unknown field${hint} (known: ${allowed.join(', ')})`);
      }
    }
  }
  /** A list, or undefined when absent. */
  list(o: Obj, k: string, path: string, what = 'a list'): unknown[] | undefined {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) this.fail(`${path}.${k}`, `must be ${what}`);
    return v;
  }
  /** A mapping, or undefined when absent. */
  optObj(o: Obj, k: string, path: string): Obj | undefined {
    const v = o[k];
    if (v === undefined || v === null) return undefined;
    return this.obj(v, `${path}.${k}`);
  }
  /** A Kubernetes qualified name: [prefix/]name, name at most 63 characters, prefix a DNS subdomain. */
  labelKey(key: unknown, field: string): string {
    if (typeof key !== 'string' || key === '') this.fail(field, `must be a label name, not ${JSON.stringify(key)}`);
    const slash = key.lastIndexOf('/');
    const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
    const name = slash >= 0 ? key.slice(slash + 1) : key;
    if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
      this.fail(field, `${JSON.stringify(key)}: the prefix must be a DNS subdomain (lower case, digits, '-' and '.')`);
    if (name.length > 63 || !LABEL_NAME.test(name))
      this.fail(
        field,
        `${JSON.stringify(key)}: a label name is at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit`,
      );
    return key;
  }
  /** A Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' and '.' between alphanumerics. */
  labelValue(v: unknown, field: string): string {
    if (typeof v !== 'string') this.fail(field, `label values must be strings, not ${JSON.stringify(v)}`);
    if (v.length > 63 || (v !== '' && !LABEL_NAME.test(v)))
      this.fail(
        field,
        `${JSON.stringify(v)} is not a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`,
      );
    return v;
  }
  /** Labels by Kubernetes' rules (the kinds that policies select on). */
  strictLabels(o: Obj, k: string, path: string): Record<string, string> | undefined {
    const m = this.optObj(o, k, path);
    if (m === undefined) return undefined;
    const out: Record<string, string> = {};
    for (const [lk, lv] of Object.entries(m)) {
      this.labelKey(lk, `${path}.${k}`);
      out[lk] = this.labelValue(lv, `${path}.${k}.${lk}`);
    }
    return out;
  }
  /** An integer in [min, max], numbers only: a string is refused as one, whatever it holds. */
  num(v: unknown, field: string, min: number, max: number): number {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      this.fail(
        field,
        `must be an integer from ${min} to ${max}, not ${typeof v === 'string' ? `the string ${JSON.stringify(v)}` : JSON.stringify(v)}`,
      );
    return v;
  }
}

const LABEL_NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
