// Errors a datastore caller can act on. Each says what happened and what to do.

export class DatastoreError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'DatastoreError';
  }
}

export class NotFoundError extends DatastoreError {
  constructor(
    readonly kind: string,
    readonly key: string,
  ) {
    super(`${kind} ${JSON.stringify(key)} does not exist`, 'NotFound');
  }
}

export class AlreadyExistsError extends DatastoreError {
  constructor(
    readonly kind: string,
    readonly key: string,
  ) {
    super(`${kind} ${JSON.stringify(key)} already exists (use update or apply)`, 'AlreadyExists');
  }
}

/** The revision guard failed: someone else wrote the object since it was read. Re-read and retry. */
export class ConflictError extends DatastoreError {
  constructor(
    readonly kind: string,
    readonly key: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super(`${kind} ${JSON.stringify(key)} was modified: expected revision ${expected}, store has ${actual}; re-read and retry`, 'Conflict');
  }
}

/** The store cannot be reached; the call was not queued. It may be retried once the store is back. */
export class DatastoreUnavailableError extends DatastoreError {
  constructor(detail: string, cause?: unknown) {
    super(`datastore unavailable: ${detail}`, 'Unavailable');
    if (cause !== undefined) this.cause = cause;
  }
}
