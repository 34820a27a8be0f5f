// Type-checked lint for every package. The rules that guard our boundaries: no floating promises,
// no deep imports into another package's src/, no import cycles, no console in services, no test
// support in production code.
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";

const BOUNDARIES = [
  {
    group: ["@metaharness/*/src", "@metaharness/*/src/*", "@metaharness/*/dist/*"],
    message: "Import the package's public entry point, not its internals.",
  },
  {
    group: ["../../packages/*", "../../apps/*", "../../../packages/*", "../../../apps/*"],
    message: "Depend on the workspace package by name.",
  },
];

// Test support lives behind a package's `/testing` export (and in test files); a service's or a
// package's own code may not import it, nor vitest, so none of it runs in production.
const TEST_SUPPORT = {
  group: ["@metaharness/*/testing", "**/testing.js", "**/testing/*", "**/*.testkit.js", "vitest", "vitest/*"],
  message: "Test support is for tests: production code may not import a /testing export or vitest.",
};

export default tseslint.config(
  {
    ignores: ["**/dist/**", "**/gen/**", "**/node_modules/**", "**/.turbo/**", "**/*.config.*", ".local/**"],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { "import-x": importX },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
      "no-restricted-imports": ["error", { patterns: BOUNDARIES }],
    },
  },
  {
    files: ["apps/*/src/**/*.ts", "packages/*/src/**/*.ts"],
    rules: { "no-console": "error" },
  },
  {
    files: ["apps/*/src/**/*.ts", "packages/*/src/**/*.ts"],
    ignores: ["**/*.test.ts", "**/testing.ts", "**/testing/**", "**/*.testkit.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [...BOUNDARIES, TEST_SUPPORT] }] },
  },
);
