// The one error type the codec throws. It carries what the session layer needs to act:
// the NOTIFICATION to send (RFC 4271 §6) and the RFC 7606 error-handling approach.
import type { UpdateMessage } from './types.js';

/**
 * What the session does about a malformed message, from the most to the least severe
 * (RFC 7606 §2). `session-reset` sends the NOTIFICATION and closes the session.
 */
export type ErrorAction = 'session-reset' | 'treat-as-withdraw' | 'attribute-discard';

const severity: Record<ErrorAction, number> = {
  'session-reset': 3,
  'treat-as-withdraw': 2,
  'attribute-discard': 1,
};

export function moreSevere(a: ErrorAction, b: ErrorAction): ErrorAction {
  return severity[a] >= severity[b] ? a : b;
}

export class BgpError extends Error {
  override readonly name = 'BgpError';
  /**
   * For `treat-as-withdraw` and `attribute-discard`: the UPDATE as far as it could be read,
   * with the offending attributes left out, so that nothing is lost. Under treat-as-withdraw
   * every prefix it announces must be withdrawn; under attribute-discard it is used as is.
   */
  update?: UpdateMessage;

  constructor(
    message: string,
    readonly code: number,
    readonly subcode: number,
    readonly data: Buffer = Buffer.alloc(0),
    readonly action: ErrorAction = 'session-reset',
  ) {
    super(message);
  }
}
