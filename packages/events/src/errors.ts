/**
 * session.error types, as Managed Agents names them. The repository_* ones report a repository
 * that could not be cloned (the session goes on without it) and carry its URL.
 */
export const REPOSITORY_ERROR_TYPES = [
  "repository_authentication_error",
  "repository_forbidden_error",
  "repository_not_found_error",
  "repository_checkout_error",
  "repository_clone_error",
] as const;

export type RepositoryErrorType = (typeof REPOSITORY_ERROR_TYPES)[number];

export function isRepositoryError(type: string): type is RepositoryErrorType {
  return (REPOSITORY_ERROR_TYPES as readonly string[]).includes(type);
}
