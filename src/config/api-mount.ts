/**
 * Where the CMS's API router is mounted, and with it every path cms-shield serves and asks for:
 * the one place paths come from (API_PATH, PAGES_ENDPOINT, API_ENDPOINTS). Wagtail's router
 * registers each endpoint at `<mount><name>/` with its listing, `<id>/` and `find/` below it
 * (docs/wagtail-compatibility.md#routes-and-methods).
 * @module
 */
import { schema, type Config } from './schema.js'

export interface ApiMount {
  /** The router's path, `/api/v2/`: where the CMS mounts it and cms-shield serves it. */
  readonly root: string
  /** The pages endpoint's name, answered from the synced tree. */
  readonly pages: string
  /** `<root><pages>/`. */
  readonly pagesPath: string
  /** The router's other endpoints, answered read-through. */
  readonly endpoints: readonly string[]
}

export function apiMount(root: string, pages: string, endpoints: readonly string[] = []): ApiMount {
  if (!root.startsWith('/') || !root.endsWith('/')) throw new TypeError(`an API path starts and ends with '/': ${root}`)
  return Object.freeze({ root, pages, pagesPath: `${root}${pages}/`, endpoints: Object.freeze([...endpoints]) })
}

export function mountOf(config: Pick<Config, 'apiPath' | 'pagesEndpoint' | 'apiEndpoints'>): ApiMount {
  return apiMount(config.apiPath, config.pagesEndpoint, config.apiEndpoints)
}

/** The mount with every setting at its default: the pages endpoint alone, at the seed's path. */
export const DEFAULT_MOUNT: ApiMount = apiMount(schema.apiPath.default, schema.pagesEndpoint.default)
