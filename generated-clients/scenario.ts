// What each generated client must do against a running server: create, read, list, update (with
// If-Match) and delete a page, and insert a blog with an image in one multipart request. Written
// against the generated code only (no SDK), and typechecked with it by test/generators.test.ts.

export interface Target {
  baseUrl: string;
  apiId: string;
  apiKey: string;
  /** A small PNG, for the blog's primary image. */
  png: Uint8Array<ArrayBuffer>;
}

/** What a scenario saw, for the test to check. */
export interface Seen {
  created: { id: number; title: string; etag: string };
  read: string;
  listed: boolean;
  updated: string;
  staleUpdateStatus: number;
  deleteStatus: number;
  afterDeleteStatus: number;
  blog: { id: number; image: string; width: number };
}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}
