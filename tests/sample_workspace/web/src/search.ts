// Client-side search helpers for the notes web front end.

export interface NoteSummary {
  id: string;
  title: string;
  snippet: string;
}

/** A source of search results, local or remote. */
export interface SearchProvider {
  search(query: string, limit?: number): Promise<NoteSummary[]>;
}

const STOP_WORDS = new Set(["a", "an", "the", "and", "or", "of", "to", "in"]);

/**
 * Tokenize a query into lower-case keywords, dropping stop words.
 */
export function tokenizeQuery(query: string): string[] {
  return query
    .split(/[^A-Za-z0-9]+/)
    .map((word) => word.toLowerCase())
    .filter((word) => word.length > 0 && !STOP_WORDS.has(word));
}

/** Base class that keeps a small cache of recent results. */
export abstract class CachedProvider<T> {
  protected cache = new Map<string, T>();

  protected remember(key: string, value: T): T {
    this.cache.set(key, value);
    return value;
  }
}

/** Calls the server's /search endpoint. */
export class RemoteSearchProvider extends CachedProvider<NoteSummary[]> implements SearchProvider {
  constructor(private readonly baseUrl: string) {
    super();
  }

  async search(query: string, limit = 10): Promise<NoteSummary[]> {
    const key = `${query}:${limit}`;
    const cached = this.cache.get(key);
    if (cached) {
      return cached;
    }
    const words = tokenizeQuery(query).join(" ");
    const response = await fetch(`${this.baseUrl}/search?q=${encodeURIComponent(words)}&limit=${limit}`);
    if (!response.ok) {
      throw new Error(`search failed: ${response.status}`);
    }
    return this.remember(key, (await response.json()) as NoteSummary[]);
  }
}
