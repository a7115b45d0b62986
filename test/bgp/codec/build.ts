// Raw message builders for codec tests: they write exactly the octets a test names,
// including the malformed ones the encoder would refuse to produce.

export function header(type: number, body: Buffer, length = 19 + body.length): Buffer {
  const h = Buffer.alloc(19, 0xff);
  h.writeUInt16BE(length, 16);
  h[18] = type;
  return Buffer.concat([h, body]);
}

export function attr(flags: number, type: number, value: Buffer | number[]): Buffer {
  const v = Buffer.from(value);
  if (flags & 0x10) {
    const h = Buffer.from([flags, type, 0, 0]);
    h.writeUInt16BE(v.length, 2);
    return Buffer.concat([h, v]);
  }
  return Buffer.concat([Buffer.from([flags, type, v.length]), v]);
}

export function rawUpdate(withdrawn: Buffer, attrs: Buffer, nlri: Buffer): Buffer {
  const w = Buffer.alloc(2);
  w.writeUInt16BE(withdrawn.length);
  const a = Buffer.alloc(2);
  a.writeUInt16BE(attrs.length);
  return header(2, Buffer.concat([w, withdrawn, a, attrs, nlri]));
}

export const origin = (v = 0) => attr(0x40, 1, [v]);
export const asPath4 = (...asns: number[]) => {
  const v = Buffer.alloc(2 + 4 * asns.length);
  v[0] = 2;
  v[1] = asns.length;
  for (const [i, a] of asns.entries()) v.writeUInt32BE(a, 2 + 4 * i);
  return attr(0x40, 2, v);
};
export const nextHop = (...octets: number[]) => attr(0x40, 3, octets);
/** The three mandatory attributes of an IPv4 announcement. */
export const mandatory = () => Buffer.concat([origin(0), asPath4(65001), nextHop(10, 0, 0, 1)]);
/** 10.1.0.0/16 as an NLRI entry. */
export const nlri16 = Buffer.from([16, 10, 1]);
