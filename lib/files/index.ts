// Files and folders a daemon keeps to itself (private.ts), and the kernel's trees no daemon
// writes in (kernel-trees.ts).
export { kernelTreeProblem } from './kernel-trees.js';
export { FOLDER_MODE, ownerName, PRIVATE_FILE_MODE, privateFolder, trustedOwner, UnsafePathError, writePrivateFile } from './private.js';
