/**
 * Stops at once, with one line, on a Node.js older than the service supports (package.json's
 * `engines`). Imported first by every entry point (the server, the `cms` command), so it runs
 * before anything else loads: on an older Node the native database module crashes the process
 * with a segmentation fault and no word of why.
 */
export const MINIMUM_NODE = { major: 22, minor: 12 } as const;

/** The message for a Node.js version the service does not run on, or undefined when it does. */
export function unsupportedNode(version: string): string | undefined {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major > MINIMUM_NODE.major || (major === MINIMUM_NODE.major && minor >= MINIMUM_NODE.minor)) return undefined;
  return (
    `This service needs Node.js ${MINIMUM_NODE.major}.${MINIMUM_NODE.minor} or later (the 22 and 24 LTS lines); this is Node.js ${version}. ` +
    'Start it with `npm start` (or `npm run cms -- …`), which runs the Node.js 24 that `npm ci` installed, or install Node.js 22 or 24.'
  );
}

const refused = unsupportedNode(process.version);
if (refused) {
  process.stderr.write(`${refused}\n`);
  process.exit(1);
}
