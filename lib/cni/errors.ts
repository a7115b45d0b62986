// CNI errors as the spec defines them: a JSON object on stdout, a non-zero exit.
// Codes 1-99 are the spec's; 100 and up are this plugin's own.

export const CNI_CODES = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnvironment: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  /** The pools selecting this node have no free address. */
  noAddresses: 100,
  /** CHECK found the container's networking different from what ADD made. */
  checkFailed: 101,
  /** The datastore is not the one this node allocated from (emptied, replaced, rolled back): repair first. */
  storeReplaced: 103,
  /** Anything else that failed inside the plugin. */
  internal: 102,
} as const;

export class CniError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details?: string,
  ) {
    super(message);
    this.name = 'CniError';
  }

  toJSON(cniVersion: string): Record<string, unknown> {
    return { cniVersion, code: this.code, msg: this.message, ...(this.details ? { details: this.details } : {}) };
  }
}
