// Files and folders a daemon keeps to itself: see private.ts.
export { FOLDER_MODE, ownerName, PRIVATE_FILE_MODE, privateFolder, trustedOwner, UnsafePathError, writePrivateFile } from './private.js';
