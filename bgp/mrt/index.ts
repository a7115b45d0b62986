export { readMrt, readMrtFile, MrtFormatError, type MrtRecord, type MrtSession } from './reader.js';
