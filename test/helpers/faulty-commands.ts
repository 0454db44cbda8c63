/**
 * The failures a Redis client can show a caller, on demand, for stubs of its commands: a
 * synchronous throw (a client bug), a rejection (the offline queue refusing), a promise that
 * never settles (a hung server), or the answer.
 */
export type Mode = 'ok' | 'fail' | 'hang' | 'throw'

export interface FaultyCommands {
  /** Set `mode` to change how the next commands behave; `calls` names every command sent. */
  readonly state: { mode: Mode; calls: string[] }
  /** One command: recorded, then failing as `state.mode` says or answering `answer()`. */
  run<T>(call: string, answer: () => T): Promise<T>
}

export function faultyCommands(): FaultyCommands {
  const state = { mode: 'ok' as Mode, calls: [] as string[] }
  return {
    state,
    run<T>(call: string, answer: () => T): Promise<T> {
      state.calls.push(call)
      if (state.mode === 'throw') throw new Error('synchronous client bug')
      if (state.mode === 'fail') return Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false"))
      if (state.mode === 'hang') return new Promise<T>(() => {})
      return Promise.resolve(answer())
    },
  }
}
