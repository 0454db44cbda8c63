# Two images from one file:
#   docker build -t cms-shield .                                   # production (the last stage, `runtime`)
#   docker build -t cms-shield-demo-cms --target demo-cms .        # the fake Wagtail CMS of compose.yaml
#
# Both ship compiled JavaScript run by plain `node`: TypeScript, tsx, the npm cache and the test
# tree never reach them, and neither writes to its filesystem (cms-shield only to a SNAPSHOT_FILE,
# when one is set: give it a volume), so both run with a read-only root filesystem
# (`docker run --read-only`) and need no tmpfs. No `# syntax=` line: the builder's own Dockerfile
# frontend reads this file (nothing here needs a newer one), so a build pulls only the node base
# image, from Docker Hub or from whatever mirror the daemon is set up with.
# test/deploy-files.test.ts checks this file without a Docker engine.

# A current Node.js LTS line, the one CI tests first (the code also runs on Node 22.13+, tested too);
# override with --build-arg NODE_VERSION=22.
ARG NODE_VERSION=24

# Every dependency, dev ones included: the compilers' stages only, installed once.
FROM node:${NODE_VERSION}-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# The fake Wagtail origin (scripts/fake-cms.ts and the modules it loads) compiled to dist-demo/.
FROM deps AS demo-build
COPY tsconfig.json tsconfig.demo.json ./
COPY scripts/fake-cms.ts ./scripts/fake-cms.ts
COPY test/fake-wagtail ./test/fake-wagtail
RUN npm run build:demo-cms

# The fake Wagtail CMS with the generated seed-shaped site. Not for production. It imports no
# package, so it installs none: package.json is there for its "type": "module".
FROM node:${NODE_VERSION}-slim AS demo-cms
ENV PORT=8000 HOST=0.0.0.0 PAGES=89 LATENCY_MS=20
WORKDIR /app
COPY package.json ./
COPY --from=demo-build /app/dist-demo ./dist-demo
USER node
EXPOSE 8000
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/api/v1/cms/pages/?limit=1',{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# node itself is PID 1 (no npx or shell wrapper), so SIGTERM reaches the script's handler directly.
CMD ["node", "dist-demo/scripts/fake-cms.js"]

# Production: the default target, so a plain `docker build .` gives this image.
FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The node image's unprivileged user; the files stay root's, so the process cannot rewrite its own code.
USER node
EXPOSE 8080
# Slim images have no curl: node's own fetch asks /healthz, bounded below Docker's --timeout.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz',{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# cms-shield closes on SIGTERM (finishing requests in flight, releasing its Redis lease); compose's
# stop_grace_period must exceed its SHUTDOWN_TIMEOUT.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
