# syntax=docker/dockerfile:1
#
# Tessera's image: `docker build -t tessera .` (or `podman build`). One image for every role; the command picks it:
#   docker run … tessera serve --role api | serve --role worker | migrate | clients create --name …
# See docs/deployment.md (Containers) and compose.yaml.

# Build stage: the runtime dependencies exactly as package-lock.json has them. Among them is the npm `node`
# package, which installs the Node.js binary the project pins (package.json), so the image runs that version and
# not whichever the base image has. No build step: Node runs the TypeScript sources (type stripping), and the
# browser bundles are made in memory at start. Dev dependencies (tests, lint, benchmarks) stay out.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
  && npm cache clean --force \
  && node_modules/.bin/node --version
COPY bin ./bin
COPY src ./src
COPY widgets ./widgets
COPY examples ./examples
COPY reference-data ./reference-data
COPY tsconfig.json ./

# Runtime: plain Debian 12 (the glibc and libstdc++ the pinned binary needs) and the application, run by an
# unprivileged user that owns nothing but the data directory.
FROM debian:bookworm-slim
ARG TESSERA_UID=10001
RUN groupadd --system --gid "$TESSERA_UID" tessera \
  && useradd --system --uid "$TESSERA_UID" --gid tessera --home-dir /app --no-create-home --shell /usr/sbin/nologin tessera \
  && mkdir -p /data/files \
  && chown -R tessera:tessera /data
COPY --from=build /app /app
WORKDIR /app
ENV PATH=/app/node_modules/.bin:$PATH \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
# A volume mounted here (a named one is seeded with this directory's owner) keeps the embedded database, sandbox
# keys and uploaded files; on PostgreSQL only `files` matters, shared by every process (FILE_STORAGE_DIR).
VOLUME ["/data"]
USER ${TESSERA_UID}:${TESSERA_UID}
EXPOSE 3000
# Ready: the process answers and reaches its database. The worker role serves no HTTP: disable this check for it
# (compose.yaml does) and supervise it as a process.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 3000}/health/ready`, { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM (docker stop) lets in-flight requests and jobs finish for SHUTDOWN_TIMEOUT_MS, then the process exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/bin/tessera"]
CMD ["serve"]
