// Worker entry: a worker thread does not inherit tsx's loader, so register it here first.
import { register } from 'tsx/esm/api';
register();
await import('./scale-reflector.ts');
