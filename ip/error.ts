// The one error the address code throws: it names the field the text came from, so a
// caller that validates a whole document can report exactly what to fix.

export class AddressError extends Error {
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly why: string,
  ) {
    super(`${field}: ${JSON.stringify(value)} ${why}`);
    this.name = 'AddressError';
  }
}
