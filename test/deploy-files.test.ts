/**
 * The deployment files, checked without a Docker engine (none runs on our development machines or
 * in CI). What an image build would catch late is caught here: a COPY of a file that does not exist
 * or that `.dockerignore` leaves out, a module the image needs but never receives, a production
 * import of a dev dependency (the image installs `--omit=dev`), a CMD that names a file the build
 * does not write, a health check on the wrong port, a compose variable cms-shield does not read, a
 * `# syntax=` line that makes every build pull a frontend image from Docker Hub, an npm cache left
 * in an image, a demo CMS that needs tsx (and so a writable /tmp) to start.
 *
 * Not checked here (it needs an engine): that the base images exist, that `npm ci` succeeds inside
 * them, and how the containers behave together.
 *
 * The Dockerfile and compose.yaml are read line by line with small readers that understand only
 * the forms these two files use; a form they do not know fails the test rather than being skipped.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isBuiltin } from 'node:module'
import { join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/load-config.js'
import { parseDuration } from '../src/config/duration.js'
import { variables } from '../src/config/schema.js'
import { generateSite, startFakeWagtail } from './fake-wagtail/index.js'
import { backendsOf } from './helpers/varnish-server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

// ---------------------------------------------------------------------------------------------
// Dockerfile

interface Instruction {
  readonly keyword: string
  readonly args: string
  readonly line: number
}

interface Stage {
  readonly name: string
  /** The stage this one is built `FROM`, when it is a stage of this file. */
  readonly parent: Stage | undefined
  readonly instructions: Instruction[]
}

/** Instructions in order: comments dropped, `\` continuations joined, keywords upper-cased. */
function dockerInstructions(source: string): Instruction[] {
  const instructions: Instruction[] = []
  let pending: { text: string; line: number } | undefined
  source.split('\n').forEach((raw, index) => {
    const text = raw.trim()
    if (text.startsWith('#') || (text === '' && pending === undefined)) return
    const continued = text.endsWith('\\')
    const part = continued ? text.slice(0, -1).trim() : text
    pending = pending === undefined ? { text: part, line: index + 1 } : { text: `${pending.text} ${part}`, line: pending.line }
    if (continued) return
    const match = /^([A-Za-z]+)\s+(.*)$/.exec(pending.text)
    if (!match) throw new Error(`Dockerfile:${pending.line}: not an instruction: ${pending.text}`)
    instructions.push({ keyword: (match[1] as string).toUpperCase(), args: (match[2] as string).trim(), line: pending.line })
    pending = undefined
  })
  return instructions
}

function dockerStages(source: string): Stage[] {
  const stages: Stage[] = []
  for (const instruction of dockerInstructions(source)) {
    if (instruction.keyword === 'FROM') {
      const words = instruction.args.split(/\s+/).filter((word) => !word.startsWith('--'))
      const name = words.length === 3 && words[1]?.toUpperCase() === 'AS' ? (words[2] as string) : String(stages.length)
      stages.push({ name, parent: stages.find((stage) => stage.name === words[0]), instructions: [] })
    } else if (stages.length > 0) {
      stages.at(-1)?.instructions.push(instruction)
    } else if (instruction.keyword !== 'ARG') {
      throw new Error(`Dockerfile:${instruction.line}: ${instruction.keyword} before the first FROM`)
    }
  }
  return stages
}

/** A stage's instructions with those it inherits from its parent stages first, as the build runs them. */
function lineage(stage: Stage): Instruction[] {
  return [...(stage.parent ? lineage(stage.parent) : []), ...stage.instructions]
}

const ofKind = (stage: Stage, keyword: string) => lineage(stage).filter((instruction) => instruction.keyword === keyword)
const last = (stage: Stage, keyword: string) => ofKind(stage, keyword).at(-1)

/** An exec-form (JSON array) command; the shell form would run under `sh -c` and swallow SIGTERM. */
function execForm(args: string): string[] {
  expect(args.startsWith('['), `exec form expected, got: ${args}`).toBe(true)
  return JSON.parse(args) as string[]
}

function stageEnv(stage: Stage): Map<string, string> {
  const env = new Map<string, string>()
  for (const instruction of ofKind(stage, 'ENV')) {
    for (const pair of instruction.args.split(/\s+/)) {
      const at = pair.indexOf('=')
      if (at <= 0) throw new Error(`Dockerfile:${instruction.line}: only ENV KEY=value is read here`)
      env.set(pair.slice(0, at), pair.slice(at + 1))
    }
  }
  return env
}

interface Copy {
  readonly from: string | undefined
  readonly sources: string[]
  /** Where the sources land, made absolute against the WORKDIR in force. */
  readonly destination: string
  readonly line: number
}

/** Every COPY a stage (with its parents) runs, with its WORKDIR resolved. */
function copies(stage: Stage): Copy[] {
  let workdir = '/'
  const result: Copy[] = []
  for (const instruction of lineage(stage)) {
    if (instruction.keyword === 'WORKDIR') workdir = posix.resolve(workdir, instruction.args)
    if (instruction.keyword !== 'COPY' && instruction.keyword !== 'ADD') continue
    expect(instruction.keyword, `Dockerfile:${instruction.line}: COPY, not ADD`).toBe('COPY')
    const words = instruction.args.split(/\s+/)
    const flags = words.filter((word) => word.startsWith('--'))
    const rest = words.filter((word) => !word.startsWith('--'))
    const paths = rest[0]?.startsWith('[') ? (JSON.parse(rest.join(' ')) as string[]) : rest
    const destination = paths.at(-1) as string
    result.push({
      from: flags.find((flag) => flag.startsWith('--from='))?.slice('--from='.length),
      sources: paths.slice(0, -1).map((source) => posix.normalize(source).replace(/\/$/, '')),
      destination: posix.resolve(workdir, destination) + (destination.endsWith('/') ? '/' : ''),
      line: instruction.line,
    })
  }
  return result
}

/** Where a repository file lands in a stage's filesystem, or undefined when no COPY brings it. */
function imagePathOf(stage: Stage, file: string): string | undefined {
  let found: string | undefined
  for (const copy of copies(stage)) {
    if (copy.from !== undefined) continue
    for (const source of copy.sources) {
      if (source === file) {
        const single = copy.sources.length === 1 && !copy.destination.endsWith('/')
        found = single ? copy.destination : posix.join(copy.destination, posix.basename(file))
      } else if (source === '.' || file.startsWith(`${source}/`)) {
        found = posix.join(copy.destination, source === '.' ? file : file.slice(source.length + 1))
      }
    }
  }
  return found
}

function workdirOf(stage: Stage): string {
  return ofKind(stage, 'WORKDIR').reduce((dir, instruction) => posix.resolve(dir, instruction.args), '/')
}

// ---------------------------------------------------------------------------------------------
// .dockerignore, with Docker's rules: patterns are rooted at the context, a pattern that matches a
// directory leaves out everything under it, `!` takes a path back, and the last matching line wins.

function dockerignore(source: string): (path: string) => boolean {
  const rules = source
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const keep = line.startsWith('!')
      const pattern = posix.normalize((keep ? line.slice(1) : line).trim()).replace(/^\/+|\/+$/g, '')
      const regex = pattern
        .split('')
        .map((char, i, chars) => {
          if (char === '*') return chars[i + 1] === '*' ? '' : chars[i - 1] === '*' ? '.*' : '[^/]*'
          if (char === '?') return '[^/]'
          return char.replace(/[.+^${}()|[\]\\]/g, '\\$&')
        })
        .join('')
      return { keep, matches: new RegExp(`^${regex}$`) }
    })
  return (path: string) => {
    const parts = path.split('/')
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'))
    let excluded = false
    for (const rule of rules) if (prefixes.some((prefix) => rule.matches.test(prefix))) excluded = !rule.keep
    return excluded
  }
}

/** Every file under a repository path (the path itself when it is a file), node_modules and .git aside. */
function filesUnder(path: string): string[] {
  const full = join(ROOT, path)
  if (!statSync(full).isDirectory()) return [path]
  return readdirSync(full).flatMap((entry) =>
    entry === 'node_modules' || entry === '.git' ? [] : filesUnder(path === '.' ? entry : `${path}/${entry}`),
  )
}

// ---------------------------------------------------------------------------------------------
// Module graph: what a program loads (or the compiler reads), from the TypeScript syntax tree.

interface ModuleGraph {
  /** Repository files, entry included. */
  readonly files: Set<string>
  /** npm package names imported by those files. */
  readonly packages: Set<string>
}

function imports(file: string): Array<{ specifier: string; typeOnly: boolean }> {
  const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, false)
  const found: Array<{ specifier: string; typeOnly: boolean }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.importClause?.phaseModifier === ts.SyntaxKind.TypeKeyword })
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly })
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments
      if (argument && ts.isStringLiteralLike(argument)) found.push({ specifier: argument.text, typeOnly: false })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** `runtime`: follow only imports that survive compilation (`import type` is erased). */
function moduleGraph(entry: string, { runtime }: { runtime: boolean }): ModuleGraph {
  const files = new Set<string>()
  const packages = new Set<string>()
  const pending = [entry]
  while (pending.length > 0) {
    const file = pending.pop() as string
    if (files.has(file)) continue
    files.add(file)
    for (const { specifier, typeOnly } of imports(file)) {
      if (runtime && typeOnly) continue
      if (specifier.startsWith('.')) {
        const target = posix.join(posix.dirname(file), specifier)
        const resolved = [target.replace(/\.js$/, '.ts'), target, `${target}/index.ts`].find((path) => existsSync(join(ROOT, path)))
        if (resolved === undefined) throw new Error(`${file}: cannot resolve ${specifier}`)
        pending.push(resolved)
      } else if (!isBuiltin(specifier)) {
        packages.add(specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/'))
      }
    }
  }
  return { files, packages }
}

// ---------------------------------------------------------------------------------------------
// compose.yaml: block mappings and sequences of scalars, two spaces per level, flow sequences as values.

interface YamlLine {
  readonly number: number
  readonly indent: number
  readonly key: string | undefined
  /** The scalar after `key:` or `- `; undefined for a `key:` that opens a block. */
  readonly value: string | undefined
}

function yamlLines(source: string): YamlLine[] {
  const lines: YamlLine[] = []
  source.split('\n').forEach((raw, index) => {
    const number = index + 1
    if (raw.includes('\t')) throw new Error(`compose.yaml:${number}: tab character`)
    const text = raw.replace(/\s+#.*$/, '').trimEnd()
    if (text.trim() === '' || text.trim().startsWith('#')) return
    const indent = text.length - text.trimStart().length
    const body = text.trim()
    const entry = /^([A-Za-z0-9_.-]+):(?:\s+(.+))?$/.exec(body)
    const item = /^-\s+(.+)$/.exec(body)
    if (!entry && !item) throw new Error(`compose.yaml:${number}: neither "key: value" nor "- item": ${body}`)
    const previous = lines.at(-1)
    const opens = previous !== undefined && previous.key !== undefined && previous.value === undefined
    if (indent % 2 !== 0 || indent > (previous?.indent ?? 0) + (opens ? 2 : 0) || (opens && indent !== previous.indent + 2)) {
      throw new Error(`compose.yaml:${number}: unexpected indentation`)
    }
    lines.push({ number, indent, key: entry?.[1], value: entry ? entry[2] : item?.[1] })
  })
  return lines
}

/** A scalar without its quotes. */
const scalar = (value: string) => value.replace(/^"(.*)"$|^'(.*)'$/, '$1$2')

/** The lines of the block under `key`, among the lines of one block. */
function block(lines: YamlLine[], key: string): YamlLine[] {
  const indent = lines[0]?.indent ?? 0
  const at = lines.findIndex((line) => line.indent === indent && line.key === key)
  if (at < 0) return []
  const end = lines.findIndex((line, i) => i > at && line.indent <= indent)
  return lines.slice(at + 1, end < 0 ? undefined : end)
}

/** The `key: value` pairs of one block (a key that opens a block maps to ''); duplicates fail. */
function mapping(lines: YamlLine[]): Map<string, string> {
  const indent = lines[0]?.indent ?? 0
  const result = new Map<string, string>()
  for (const line of lines) {
    if (line.indent !== indent || line.key === undefined) continue
    if (result.has(line.key)) throw new Error(`compose.yaml:${line.number}: duplicate key ${line.key}`)
    result.set(line.key, line.value === undefined ? '' : scalar(line.value))
  }
  return result
}

/** The `- item` scalars of one block. */
function sequence(lines: YamlLine[]): string[] {
  const indent = lines[0]?.indent ?? 0
  return lines.filter((line) => line.indent === indent && line.key === undefined).map((line) => scalar(line.value as string))
}

// ---------------------------------------------------------------------------------------------

const dockerfile = read('Dockerfile')
const stages = dockerStages(dockerfile)
const ignored = dockerignore(read('.dockerignore'))
const packageJson = JSON.parse(read('package.json')) as {
  scripts: Record<string, string>
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
}
const stage = (name: string): Stage => {
  const found = stages.find((candidate) => candidate.name === name)
  if (!found) throw new Error(`Dockerfile has no stage ${name}`)
  return found
}
/** The default target (what `docker build .` gives) must be the production image. */
const production = stages.at(-1) as Stage
const demo = stage('demo-cms')
/** The stage `COPY --from=<stage> …/dist` takes the compiled program from. */
const builder = stage(copies(production).find((copy) => copy.from !== undefined)?.from ?? '')
/** The stage the demo CMS takes its compiled JavaScript from. */
const demoBuilder = stage(copies(demo).find((copy) => copy.from !== undefined)?.from ?? '')
const demoTsconfig = JSON.parse(read('tsconfig.demo.json')) as { compilerOptions: { rootDir: string; outDir: string } }
/** Where `npm run build:demo-cms` writes the fake CMS's entry, relative to the WORKDIR. */
const demoEntry = posix.join(demoTsconfig.compilerOptions.outDir, posix.relative(demoTsconfig.compilerOptions.rootDir, 'scripts/fake-cms.ts')).replace(/\.ts$/, '.js')
const schemaNames = new Set(variables().map(([, variable]) => variable.name))
/** Node's permission model: reads allowed, every write refused (the flag lost "experimental" in Node 22). */
const READ_ONLY_NODE = [process.allowedNodeEnvironmentFlags.has('--permission') ? '--permission' : '--experimental-permission', '--allow-fs-read=*']

const composeLines = yamlLines(read('compose.yaml'))
const services = block(composeLines, 'services')
const service = (name: string) => block(services, name)
const SHIELDS = ['shield-1', 'shield-2']

describe('Dockerfile', () => {
  it('builds the production image by default: the last stage runs node dist/main.js', () => {
    expect(execForm(last(production, 'CMD')?.args ?? '')).toEqual(['node', 'dist/main.js'])
    expect(stageEnv(production).get('NODE_ENV')).toBe('production')
    expect(last(production, 'STOPSIGNAL')?.args).toBe('SIGTERM')
  })

  it('writes dist/main.js with npm run build, where the production CMD looks for it', () => {
    expect(packageJson.scripts.build).toMatch(/\btsc -p tsconfig\.build\.json\b/)
    const tsconfig = JSON.parse(read('tsconfig.build.json')) as { extends?: string; compilerOptions: { rootDir: string; outDir: string } }
    const { rootDir, outDir } = tsconfig.compilerOptions
    const emitted = posix.join(outDir, posix.relative(rootDir, 'src/main.ts')).replace(/\.ts$/, '.js')
    expect(emitted).toBe('dist/main.js')

    // The builder runs the build in its WORKDIR; production copies that dist/ to its own WORKDIR.
    expect(ofKind(builder, 'RUN').some((run) => run.args === 'npm run build')).toBe(true)
    const distCopy = copies(production).find((copy) => copy.from === builder.name)
    expect(distCopy?.sources).toEqual([posix.join(workdirOf(builder), outDir)])
    expect(posix.join(distCopy?.destination ?? '', 'main.js')).toBe(posix.join(workdirOf(production), emitted))
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json']) {
      expect(imagePathOf(builder, file), file).toBe(posix.join(workdirOf(builder), file))
    }
  })

  it.runIf(existsSync(join(ROOT, 'dist')))('finds dist/main.js in a built checkout', () => {
    expect(existsSync(join(ROOT, 'dist/main.js'))).toBe(true)
  })

  // CI builds before it tests (.ci/run), so there this runs on the dist/ of the same commit.
  it.runIf(existsSync(join(ROOT, 'dist/main.js')))('runs the built program with no write access: it syncs, is ready and exits 0 on SIGTERM', async () => {
    const cms = await startFakeWagtail({ pages: generateSite() })
    try {
      const inherited = { ...process.env }
      for (const name of Object.keys(inherited)) if (schemaNames.has(name)) delete inherited[name]
      const shield = spawn(process.execPath, [...READ_ONLY_NODE, ...execForm(last(production, 'CMD')?.args ?? '').slice(1)], {
        cwd: ROOT,
        env: { ...inherited, UPSTREAM_URL: cms.url, BASE_URL: 'https://shield.example', PORT: '0', HOST: '127.0.0.1', SHUTDOWN_TIMEOUT: '5s' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      shield.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      shield.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      const exit = new Promise<number | null>((resolve) => shield.once('exit', (code) => resolve(code)))
      try {
        let ready = 0
        const deadline = Date.now() + 15_000
        while (ready !== 200) {
          if (Date.now() > deadline || shield.exitCode !== null) throw new Error(`not ready: ${stderr}\n${stdout.slice(-2000)}`)
          const url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1]
          if (url) ready = (await fetch(`${url}/readyz`).catch(() => undefined))?.status ?? 0
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        shield.kill('SIGTERM')
        expect(await exit).toBe(0)
        expect(stderr).not.toContain('ERR_ACCESS_DENIED')
      } finally {
        if (shield.exitCode === null && shield.signalCode === null) shield.kill('SIGKILL')
      }
    } finally {
      await cms.close()
    }
  })

  it('copies only sources that exist and that .dockerignore lets into the context', () => {
    for (const built of stages) {
      for (const copy of copies(built)) {
        if (copy.from !== undefined) {
          expect(stages.indexOf(stage(copy.from)), `Dockerfile:${copy.line}`).toBeLessThan(stages.indexOf(built))
          continue
        }
        for (const source of copy.sources) {
          expect(existsSync(join(ROOT, source)), `Dockerfile:${copy.line}: ${source} does not exist`).toBe(true)
          const sent = filesUnder(source).filter((file) => !ignored(file))
          expect(sent.length, `Dockerfile:${copy.line}: .dockerignore leaves out all of ${source}`).toBeGreaterThan(0)
        }
      }
    }
  })

  it('keeps node_modules, dist, .git and local secrets out of the build context', () => {
    for (const path of ['node_modules/tsx/package.json', 'dist/main.js', '.git/HEAD', '.env', 'coverage/index.html']) {
      expect(ignored(path), path).toBe(true)
    }
    for (const path of ['package.json', 'package-lock.json', 'src/main.ts', 'test/fake-wagtail/index.ts']) {
      expect(ignored(path), path).toBe(false)
    }
  })

  it('gives the compiler every module src/main.ts reaches, at its repository path', () => {
    const workdir = workdirOf(builder)
    for (const file of moduleGraph('src/main.ts', { runtime: false }).files) {
      expect(ignored(file), `${file} is in .dockerignore`).toBe(false)
      expect(imagePathOf(builder, file), file).toBe(posix.join(workdir, file))
    }
  })

  it('installs production dependencies only, and the program imports nothing else', () => {
    const installs = ofKind(production, 'RUN').filter((run) => /\bnpm ci\b/.test(run.args))
    expect(installs.length).toBe(1)
    expect(installs[0]?.args).toMatch(/--omit=dev\b/)
    const imported = [...moduleGraph('src/main.ts', { runtime: true }).packages]
    expect(imported.filter((name) => !(name in packageJson.dependencies))).toEqual([])
  })

  it('runs as an unprivileged user in every stage that starts a process', () => {
    for (const built of [production, demo]) {
      const user = last(built, 'USER')?.args ?? 'root'
      expect(user.split(':')[0], built.name).not.toMatch(/^(root|0)$/)
    }
  })

  it('health-checks /healthz with node on the port it exposes', () => {
    const exposed = last(production, 'EXPOSE')?.args
    expect(exposed).toBe('8080')
    expect(stageEnv(production).get('PORT')).toBe(exposed)
    const check = last(production, 'HEALTHCHECK')?.args ?? ''
    const command = execForm(check.slice(check.indexOf('CMD') + 'CMD'.length).trim())
    expect(command[0]).toBe('node')
    const script = command.join(' ')
    expect(script).toContain('/healthz')
    expect(/process\.env\.PORT\s*\|\|\s*(\d+)/.exec(script)?.[1], 'fallback port').toBe(exposed)
    expect(check).toMatch(/--timeout=\d+s/)
  })

  it('compiles the demo CMS like the production image: node runs its JavaScript, no tsx, no TypeScript source', () => {
    expect(stages.indexOf(demo)).toBeLessThan(stages.length - 1)
    expect(demoEntry).toBe('dist-demo/scripts/fake-cms.js')
    expect(execForm(last(demo, 'CMD')?.args ?? '')).toEqual(['node', demoEntry])
    // The compiler's stage gets every module the script reaches, at its repository path.
    expect(packageJson.scripts['build:demo-cms']).toBe('tsc -p tsconfig.demo.json')
    expect(ofKind(demoBuilder, 'RUN').some((run) => run.args === 'npm run build:demo-cms')).toBe(true)
    const graph = moduleGraph('scripts/fake-cms.ts', { runtime: false })
    for (const file of [...graph.files, 'tsconfig.json', 'tsconfig.demo.json', 'package.json']) {
      expect(ignored(file), `${file} is in .dockerignore`).toBe(false)
      expect(imagePathOf(demoBuilder, file), file).toBe(posix.join(workdirOf(demoBuilder), file))
    }
    // The image gets the compiled tree where the CMD looks, and package.json for "type": "module".
    const compiled = copies(demo).find((copy) => copy.from === demoBuilder.name)
    expect(compiled?.sources).toEqual([posix.join(workdirOf(demoBuilder), demoTsconfig.compilerOptions.outDir)])
    expect(compiled?.destination).toBe(posix.join(workdirOf(demo), demoTsconfig.compilerOptions.outDir))
    expect(imagePathOf(demo, 'package.json')).toBe(posix.join(workdirOf(demo), 'package.json'))
    expect((JSON.parse(read('package.json')) as { type?: string }).type).toBe('module')
    for (const file of graph.files) expect(imagePathOf(demo, file), `${file} in the demo image`).toBeUndefined()
    // It imports no package at run time, so the image installs none (and no dev dependency).
    expect([...moduleGraph('scripts/fake-cms.ts', { runtime: true }).packages]).toEqual([])
    expect(ofKind(demo, 'RUN').filter((run) => /\bnpm\b/.test(run.args))).toEqual([])
    expect(last(demo, 'EXPOSE')?.args).toBe(stageEnv(demo).get('PORT'))
  })

  it('keeps no npm cache in an image: every install in a shipped stage cleans it in the same layer', () => {
    for (const shipped of [production, demo]) {
      for (const run of ofKind(shipped, 'RUN').filter((r) => /\bnpm (ci|install|i)\b/.test(r.args))) {
        expect(run.args, `Dockerfile:${run.line}`).toMatch(/&& npm cache clean --force$/)
      }
    }
  })

  it('needs no Dockerfile frontend image: no syntax directive, and only instructions the builtin frontend reads', () => {
    // A parser directive is a comment line before the first instruction; `syntax` makes BuildKit
    // pull that image (from Docker Hub) before it reads anything else.
    const leading = dockerfile.split('\n').slice(0, dockerfile.split('\n').findIndex((line) => /^[A-Za-z]/.test(line.trim())))
    expect(leading.filter((line) => /^#\s*(syntax|check)\s*=/i.test(line.trim()))).toEqual([])
    for (const instruction of dockerInstructions(dockerfile)) {
      const where = `Dockerfile:${instruction.line}: ${instruction.keyword} ${instruction.args.slice(0, 60)}`
      expect(instruction.args, where).not.toMatch(/--(mount|link|chmod|exclude|parents|network|security)\b/)
      expect(instruction.args, where).not.toMatch(/<<-?\s*["']?[A-Za-z]/)
    }
  })
})

describe('compose.yaml', () => {
  const environment = (name: string) => mapping(block(service(name), 'environment'))
  const ports = (name: string) => sequence(block(service(name), 'ports')).map((port) => port.split(':').map(Number))

  it('has redis, the demo CMS, two cms-shield replicas and Varnish', () => {
    expect([...mapping(services).keys()]).toEqual(['redis', 'cms', ...SHIELDS, 'varnish'])
    expect(mapping(service('redis')).get('image')).toBe('redis:7-alpine')
    expect(block(service('redis'), 'healthcheck').map((line) => line.value).join(' ')).toContain('"redis-cli", "ping"')
  })

  it('builds the CMS from the demo-cms target and publishes the port it listens on', () => {
    expect(mapping(block(service('cms'), 'build')).get('target')).toBe(demo.name)
    const port = Number(environment('cms').get('PORT') ?? stageEnv(demo).get('PORT'))
    expect(ports('cms')).toEqual([[port, port]])
  })

  it('builds each replica from the production target with a configuration cms-shield accepts', () => {
    for (const name of SHIELDS) {
      expect(mapping(block(service(name), 'build')).get('target'), name).toBe(production.name)
      const env = environment(name)
      expect([...env.keys()].filter((key) => !schemaNames.has(key)), `${name}: variables cms-shield does not read`).toEqual([])
      expect(env.get('UPSTREAM_URL')).toBe(`http://cms:${ports('cms')[0]?.[1]}`)
      expect(env.get('REDIS_URL')).toMatch(/^redis:\/\/redis:\d+$/)
      expect(env.get('PURGE_ALLOW')?.split(',')).not.toContain('0.0.0.0/0')
      const config = loadConfig(Object.fromEntries(env))
      expect(ports(name)[0]?.[1], `${name}: container port`).toBe(config.port)
      expect(String(config.port)).toBe(last(production, 'EXPOSE')?.args)
    }
  })

  it('runs every service it builds with a read-only root filesystem, which the images allow', () => {
    // The images' programs are checked to write nothing (the node permission-model runs above).
    for (const name of ['cms', ...SHIELDS]) {
      expect(mapping(service(name)).get('read_only'), name).toBe('true')
      expect(environment(name).has('SNAPSHOT_FILE'), `${name}: SNAPSHOT_FILE needs a writable volume`).toBe(false)
    }
  })

  it('gives the replicas one public BASE_URL and different host ports, as behind one load balancer', () => {
    expect(new Set(SHIELDS.map((name) => environment(name).get('BASE_URL'))).size).toBe(1)
    expect(new Set(SHIELDS.map((name) => ports(name)[0]?.[0])).size).toBe(SHIELDS.length)
  })

  it('puts Varnish with the shipped VCL at BASE_URL, in front of every replica, and has every replica purge it', () => {
    expect(mapping(service('varnish')).get('image')).toMatch(/^varnish:7\.\d+$/)
    const [source, target, mode] = sequence(block(service('varnish'), 'volumes'))[0]?.split(':') ?? []
    expect([posix.normalize(source ?? ''), target, mode]).toEqual(['config/varnish/default.vcl', '/etc/varnish/default.vcl', 'ro'])
    const vcl = read('config/varnish/default.vcl')
    const backends = backendsOf(vcl)
    expect(backends.map((backend) => backend.host).sort()).toEqual([...SHIELDS].sort())
    for (const backend of backends) {
      expect(backend.port, backend.name).toBe(ports(backend.host)[0]?.[1])
      expect(mapping(block(block(service('varnish'), 'depends_on'), backend.host)).get('condition')).toBe('service_healthy')
      // Each is in the director every request goes through, not merely declared.
      expect(vcl, backend.name).toMatch(new RegExp(`\\.add_backend\\(${backend.name}\\)`))
    }
    expect(vcl).toMatch(/set req\.backend_hint = \w+\.backend\(\);/)
    const [published, listening] = ports('varnish')[0] ?? []
    for (const name of SHIELDS) {
      expect(environment(name).get('CDN_PURGE_VARNISH'), name).toBe(`http://varnish:${listening}`)
      expect(new URL(environment(name).get('BASE_URL') ?? '').port, name).toBe(String(published))
    }
  })

  it('starts each replica after Redis is healthy and lets it finish shutting down before a SIGKILL', () => {
    const shutdown = variables().find(([, variable]) => variable.name === 'SHUTDOWN_TIMEOUT')?.[1]
    for (const name of SHIELDS) {
      const dependsOn = block(service(name), 'depends_on')
      expect([...mapping(dependsOn).keys()].sort(), name).toEqual(['cms', 'redis'])
      expect(mapping(block(dependsOn, 'redis')).get('condition')).toBe('service_healthy')
      const grace = parseDuration(mapping(service(name)).get('stop_grace_period') ?? '10s')
      const timeout = parseDuration(environment(name).get('SHUTDOWN_TIMEOUT') ?? shutdown?.default ?? '10s')
      expect(grace, name).toBeGreaterThan(timeout ?? Number.POSITIVE_INFINITY)
    }
  })
})

describe('scripts/fake-cms.ts, compiled as in the demo-cms image', () => {
  let child: ChildProcess | undefined
  /** Laid out as the image's WORKDIR: package.json and what `npm run build:demo-cms` wrote. */
  let app: string

  beforeAll(async () => {
    app = mkdtempSync(join(tmpdir(), 'cms-shield-demo-cms-'))
    copyFileSync(join(ROOT, 'package.json'), join(app, 'package.json'))
    const tsc = spawn(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.demo.json', '--outDir', join(app, demoTsconfig.compilerOptions.outDir)], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    tsc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    tsc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => tsc.once('exit', resolve))
    expect(code, output).toBe(0)
    expect(existsSync(join(app, demoEntry))).toBe(true)
  }, 60_000)

  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true })
  })

  afterEach(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    child = undefined
  })

  /**
   * Starts the compiled script as the image's CMD does, with HOST left to its default, under
   * Node's permission model with no write access anywhere: as on a read-only root filesystem.
   */
  function start(env: Record<string, string>): { process: ChildProcess; stdout: () => string; stderr: () => string; exit: Promise<number | null> } {
    const inherited = { ...process.env }
    delete inherited.HOST
    const [node, ...args] = execForm(last(demo, 'CMD')?.args ?? '')
    expect(node).toBe('node')
    const started = spawn(process.execPath, [...READ_ONLY_NODE, ...args], {
      cwd: app,
      env: { ...inherited, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child = started
    let stdout = ''
    let stderr = ''
    started.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    started.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exit = new Promise<number | null>((resolve) => started.once('exit', (code) => resolve(code)))
    return { process: started, stdout: () => stdout, stderr: () => stderr, exit }
  }

  async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))
    try {
      return await Promise.race([promise, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  it('serves the generated site on the port it prints and exits 0 on SIGTERM', async () => {
    const cms = start({ PORT: '0', PAGES: '7', LATENCY_MS: '0' })
    const url = await within(10_000, 'the listening line', new Promise<string>((resolve, reject) => {
      cms.process.stdout?.on('data', () => {
        const match = /listening on (http:\/\/\S+)/.exec(cms.stdout())
        if (match) resolve(match[1] as string)
      })
      void cms.exit.then((code) => reject(new Error(`exited ${code}: ${cms.stderr()}`)))
    }))

    const response = await fetch(`${url}/api/v1/cms/pages/?limit=1`, { signal: AbortSignal.timeout(5_000) })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { meta: { total_count: number }; items: unknown[] }
    expect(body.meta.total_count).toBe(7)
    expect(body.items).toHaveLength(1)

    cms.process.kill('SIGTERM')
    expect(await within(5_000, 'exit after SIGTERM', cms.exit)).toBe(0)
  })

  it('is started under flags that do refuse a write, so the runs above prove it writes nothing', async () => {
    const writer = spawn(process.execPath, [...READ_ONLY_NODE, '-e', `require('node:fs').writeFileSync(${JSON.stringify(join(app, 'written'))}, 'x')`], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    writer.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    expect(await new Promise((resolve) => writer.once('exit', resolve))).not.toBe(0)
    expect(stderr).toContain('ERR_ACCESS_DENIED')
    expect(existsSync(join(app, 'written'))).toBe(false)
  })

  it('refuses a bad variable with exit code 2, naming it', async () => {
    const cms = start({ PORT: '0', PAGES: 'many' })
    expect(await within(10_000, 'exit', cms.exit)).toBe(2)
    expect(cms.stderr()).toContain('PAGES')
  })
})
