// Refuses to start on a Node.js older than the one crosstalk needs, with one line that says what to do.
// Imported first by every entry point (npm start, npm run worker, the CLI), before anything else loads.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  console.error(
    `crosstalk: needs Node.js >= 22.12 (24 LTS recommended), this is ${process.version}; ` +
      '`npm install` provides Node 24 in node_modules/.bin, so run it through npm: `npm start`, `npm run worker`, `npx crosstalk`.',
  );
  process.exit(1);
}
