/** A ServiceInput felix cannot program: the field is named, nothing is applied. */
export class ServiceCompileError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'ServiceCompileError';
  }
}
