// Type-checked lint for every package. The rules that guard our boundaries: no floating promises,
// no deep imports into another package's src/, no import cycles, no console in services.
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";

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
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@metaharness/*/src", "@metaharness/*/src/*", "@metaharness/*/dist/*"],
              message: "Import the package's public entry point, not its internals.",
            },
            {
              group: ["../../packages/*", "../../apps/*", "../../../packages/*", "../../../apps/*"],
              message: "Depend on the workspace package by name.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["apps/*/src/**/*.ts", "packages/*/src/**/*.ts"],
    rules: { "no-console": "error" },
  },
);
