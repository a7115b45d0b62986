// The one error the policy compiler throws: input it cannot turn into nftables (a dangling
// reference, a malformed address, ports on a protocol without ports), named by its field so the
// agent can say which resource to fix. Nothing is applied when it is thrown.
export class PolicyCompileError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'PolicyCompileError';
  }
}
