// The fetch that orval's generated functions call (its "mutator"): the base URL and credentials
// are the application's to give, not the generator's.
let base = '';
let headers: Record<string, string> = {};

/** Where the API is and how to authenticate; call once before any generated function. */
export function configure(options: { baseUrl: string; headers: Record<string, string> }): void {
  base = options.baseUrl.replace(/\/+$/, '');
  headers = options.headers;
}

/** Answers `{ data, status, headers }` for every status, as orval's fetch client types it. */
export const customFetch = async <T>(url: string, options: RequestInit): Promise<T> => {
  const request = new Headers(options.headers);
  for (const [name, value] of Object.entries(headers)) request.set(name, value);
  const response = await fetch(`${base}${url}`, { ...options, headers: request });
  const text = [204, 205, 304].includes(response.status) ? '' : await response.text();
  return { data: text ? JSON.parse(text) : undefined, status: response.status, headers: response.headers } as T;
};
