// Import rules that CI checks (npm run deps): no cycles anywhere, the data layer depends on
// nothing above it, the console on the OAuth services only, the content on no webhook module, and
// the web pages' helpers on no feature. See docs/architecture.md for the folders and what each owns.
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
      from: { path: '^src/db/(sqlite/|postgres/)?[^/]+\\.ts$', pathNot: '\\.test\\.ts$' },
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
    {
      name: 'console-uses-oauth-services',
      severity: 'error',
      comment:
        'The owner console uses the authorization server through its services (*.service.ts) and its scopes, ' +
        'never its repositories, provider internals, views or interaction steps: those may change without the console knowing.',
      from: { path: '^src/console/' },
      to: { path: '^src/oauth/', pathNot: '^src/oauth/(.+\\.service|scopes)\\.ts$' },
    },
    {
      name: 'content-not-on-webhooks',
      severity: 'error',
      comment:
        'Pages, blogs and their history know nothing of webhooks: the change log queues a change\u2019s deliveries through the ' +
        'outbox it is handed where the app is wired (app.ts, the cms command; webhook.outbox.ts), so a write shows its steps ' +
        'and the content folder builds without the webhooks.',
      from: { path: '^src/content/' },
      to: { path: '^src/webhooks/' },
    },
    {
      name: 'web-not-on-features',
      severity: 'error',
      comment:
        'src/web renders pages and handles CSRF, forms and flash notices for the OAuth pages and the console alike; ' +
        'the features build on it, so it imports none of them.',
      from: { path: '^src/web/' },
      to: { path: '^src/(oauth|console|content|mcp|accounts)/' },
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
