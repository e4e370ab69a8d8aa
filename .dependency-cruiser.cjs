// Import rules that CI checks (npm run deps): no cycles anywhere, and the data layer depends on
// nothing above it. See docs/architecture.md for the folders and what each owns.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'A cycle makes the load order decide what a module sees; move what both need below both.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'db-stays-below',
      severity: 'error',
      comment:
        'src/db runs statements and owns connections: it must not depend on authentication, HTTP or the features. ' +
        'The tables it types (*.table.ts, *.tables.ts) are the exception. Migrations that rebuild derived data ' +
        '(stored records, search text) use the features\u2019 own builders and are not held to this.',
      from: { path: '^src/db/[^/]+\\.ts$', pathNot: '\\.test\\.ts$' },
      to: {
        path: '^src/(auth|http|oauth|console|content|mcp|reference|storage|accounts|cli|demo)/',
        pathNot: '\\.tables?\\.ts$',
      },
    },
    {
      name: 'auth-not-on-features',
      severity: 'error',
      comment: 'Authentication is below the features and the web pages that use it.',
      from: { path: '^src/auth/', pathNot: '\\.test\\.ts$' },
      to: { path: '^src/(content|mcp|console|reference)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
  },
};
