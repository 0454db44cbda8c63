# syntax=docker/dockerfile:1
#
# Two images from one file:
#   docker build -t cms-shield .                                   # production (the last stage, `runtime`)
#   docker build -t cms-shield-demo-cms --target demo-cms .        # the fake Wagtail CMS of compose.yaml
#
# `runtime` ships compiled JavaScript and production dependencies only; TypeScript, tsx and the
# test tree never reach it. `demo-cms` is for demos: it runs TypeScript through tsx, so it keeps
# the dev dependencies. test/deploy-files.test.ts checks this file without a Docker engine.

# A current Node.js LTS line (the code also runs on Node 20.19+); override with --build-arg NODE_VERSION=22.
ARG NODE_VERSION=24

# Every dependency, dev ones included: shared by the compiler stage and the demo CMS, installed once.
FROM node:${NODE_VERSION}-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# The fake Wagtail origin (scripts/fake-cms.ts) with the generated seed-shaped site. Not for production.
FROM deps AS demo-cms
ENV PORT=8000 HOST=0.0.0.0 PAGES=89 LATENCY_MS=20
COPY tsconfig.json ./
COPY scripts/fake-cms.ts ./scripts/fake-cms.ts
COPY test/fake-wagtail ./test/fake-wagtail
USER node
EXPOSE 8000
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/api/v1/cms/pages/?limit=1',{signal:AbortSignal.timeout(2000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# node itself is PID 1 (no npx or tsx wrapper), so SIGTERM reaches the script's handler directly.
CMD ["node", "--import", "tsx", "scripts/fake-cms.ts"]

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
