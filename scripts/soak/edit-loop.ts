/**
 * The soak's editor: every SOAK_EDIT_EVERY one edit at the origin through its control API
 * (bench/origin.ts `/edit` and `/mutate`), like an editor publishing in Wagtail. A body-only edit
 * is followed by a PURGE of the page's API detail URL, as Wagtail's frontend-cache backend sends
 * it (docs/wagtail-compatibility.md#what-wagtail-purges): the listing does not show such an edit, so only the PURGE (or the next full
 * sync) brings it in.
 *
 * After each edit, cms-shield's detail of that page is polled until it shows the edit, so the
 * report can tell that syncs keep up during the whole soak, not only that memory stays flat.
 * Every wait is bounded: the control call by its timeout, each poll by `visibleWithinMs`.
 * @module
 */
import { call, postJson } from '../../bench/lib/http.js'

export type EditOp = 'rename' | 'body' | 'move' | 'flag' | 'create' | 'delete' | 'unpublish' | 'publish'

/** How often each edit is tried; one that cannot be made now (nothing to delete) becomes a rename. */
const WEIGHTS: ReadonlyArray<readonly [EditOp, number]> = [
  ['rename', 0.25],
  ['body', 0.2],
  ['move', 0.15],
  ['flag', 0.1],
  ['create', 0.1],
  ['delete', 0.08],
  ['unpublish', 0.06],
  ['publish', 0.06],
]
/** Pages the editor created and keeps at most; past it, a create becomes a delete. */
const MAX_CREATED = 20
const POLL_EVERY_MS = 100

export interface EditRecord {
  op: EditOp
  id: number | null
  /** Time since the soak started. */
  atMs: number
  /**
   * `visible`: cms-shield served it; `late`: not within the bound; `failed`: the origin refused the
   * edit; `unfinished`: the soak ended while it was still awaited; `superseded`: a later edit of
   * the same page (a delete right after its create, say) came before it was served, so it never
   * can be (neither of the last two counts against anything).
   */
  outcome: 'visible' | 'late' | 'failed' | 'unfinished' | 'superseded'
  /** From the edit to cms-shield serving it (outcome `visible`). */
  visibleMs: number | null
  purged: boolean
  error: string | null
}

export interface EditLoopOptions {
  readonly control: string
  readonly shield: string
  readonly everyMs: number
  readonly visibleWithinMs: number
  readonly startedAt: number
}

interface MutateAnswer {
  op?: string
  id: number
  title?: string
  intro?: string
  parentId?: number
  showInMenus?: boolean
  live?: boolean
  path: string
}

interface DetailBody {
  title?: unknown
  intro?: unknown
  meta?: { parent?: { id?: unknown } | null; show_in_menus?: unknown }
}

/** What cms-shield's detail must show once it has the edit. */
function shows(op: EditOp, answer: MutateAnswer, status: number, body: DetailBody | undefined): boolean {
  switch (op) {
    case 'rename':
      return status === 200 && body?.title === answer.title
    case 'body':
      return status === 200 && body?.intro === answer.intro
    case 'move':
      return status === 200 && body?.meta?.parent?.id === answer.parentId
    case 'flag':
      return status === 200 && body?.meta?.show_in_menus === answer.showInMenus
    case 'create':
    case 'publish':
      return status === 200
    case 'delete':
    case 'unpublish':
      return status === 404
  }
}

export class EditLoop {
  private readonly records: EditRecord[] = []
  private readonly polls = new Set<Promise<void>>()
  /** Created pages and whether each is live. */
  private readonly created = new Map<number, boolean>()
  /** Each page's latest edit, by its number: an earlier edit still awaited is superseded. */
  private readonly latestEdit = new Map<number, number>()
  private stopped = false
  private aborted = false
  private wake: (() => void) | undefined
  private loop: Promise<void> | undefined
  edits = 0
  purges = 0

  constructor(private readonly options: EditLoopOptions) {}

  start(): void {
    this.loop ??= this.run()
  }

  /** Records finished (visible, timed out or failed) since the last call. */
  take(): EditRecord[] {
    return this.records.splice(0)
  }

  /** No new edit; edits still awaited get up to `drainMs` to show, then count as unfinished. */
  async stop(drainMs: number): Promise<void> {
    this.stopped = true
    this.wake?.()
    await this.loop
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.allSettled([...this.polls]), new Promise((resolve) => (timer = setTimeout(resolve, drainMs)))])
    clearTimeout(timer)
    this.aborted = true
    await Promise.allSettled([...this.polls])
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const tickStart = Date.now()
      await this.editOnce()
      const wait = this.options.everyMs - (Date.now() - tickStart)
      if (wait > 0 && !this.stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait)
          this.wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        this.wake = undefined
      }
    }
  }

  private chooseOp(): EditOp {
    let roll = Math.random()
    let op: EditOp = 'rename'
    for (const [candidate, weight] of WEIGHTS) {
      roll -= weight
      if (roll < 0) {
        op = candidate
        break
      }
    }
    const live = [...this.created.values()].filter(Boolean).length
    if (op === 'create' && this.created.size >= MAX_CREATED) op = 'delete'
    if ((op === 'delete' && this.created.size === 0) || (op === 'unpublish' && live === 0) || (op === 'publish' && live === this.created.size)) {
      op = 'rename'
    }
    return op
  }

  private async editOnce(): Promise<void> {
    const op = this.chooseOp()
    const atMs = Date.now() - this.options.startedAt
    const editedAt = Date.now()
    let answer: MutateAnswer
    try {
      answer = op === 'rename'
        ? await postJson<MutateAnswer>(`${this.options.control}/edit`, {}, 10_000)
        : await postJson<MutateAnswer>(`${this.options.control}/mutate`, { op }, 10_000)
    } catch (error) {
      this.records.push({ op, id: null, atMs, outcome: 'failed', visibleMs: null, purged: false, error: `edit: ${error instanceof Error ? error.message : String(error)}` })
      return
    }
    this.edits++
    const sequence = this.edits
    this.latestEdit.set(answer.id, sequence)
    if (op === 'create' || op === 'publish') this.created.set(answer.id, true)
    if (op === 'unpublish') this.created.set(answer.id, false)
    if (op === 'delete') this.created.delete(answer.id)
    let purged = false
    let purgeError: string | null = null
    if (op === 'body') {
      try {
        const response = await call(`${this.options.shield}${answer.path}`, { method: 'PURGE', timeoutMs: 10_000 })
        purged = response.status === 200
        if (!purged) purgeError = `PURGE answered ${response.status}`
        this.purges++
      } catch (error) {
        purgeError = `PURGE: ${error instanceof Error ? error.message : String(error)}`
      }
    }
    const poll = this.pollUntilVisible(op, answer, editedAt, atMs, purged, purgeError, sequence)
    this.polls.add(poll)
    void poll.finally(() => this.polls.delete(poll))
  }

  private async pollUntilVisible(op: EditOp, answer: MutateAnswer, editedAt: number, atMs: number, purged: boolean, purgeError: string | null, sequence: number): Promise<void> {
    const until = editedAt + this.options.visibleWithinMs
    let lastError: string | null = purgeError
    for (;;) {
      if (this.latestEdit.get(answer.id) !== sequence) {
        this.records.push({ op, id: answer.id, atMs, outcome: 'superseded', visibleMs: null, purged, error: null })
        return
      }
      try {
        const response = await call(`${this.options.shield}${answer.path}`, { timeoutMs: 5_000 })
        let body: DetailBody | undefined
        if (response.status === 200) body = JSON.parse(response.body.toString('utf8')) as DetailBody
        if (shows(op, answer, response.status, body)) {
          this.records.push({ op, id: answer.id, atMs, outcome: 'visible', visibleMs: Date.now() - editedAt, purged, error: purgeError })
          return
        }
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error)
      }
      if (this.aborted) {
        this.records.push({ op, id: answer.id, atMs, outcome: 'unfinished', visibleMs: null, purged, error: lastError })
        return
      }
      if (Date.now() >= until) {
        const why = `not visible within ${this.options.visibleWithinMs} ms`
        this.records.push({ op, id: answer.id, atMs, outcome: 'late', visibleMs: null, purged, error: lastError === null ? why : `${why}; ${lastError}` })
        return
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_EVERY_MS))
    }
  }
}
