# syntax=docker/dockerfile:1
#
# nodetruth: a read-only agent that tells what a Kubernetes node is really doing.
#
#   docker build -t ghcr.io/nodetruth/nodetruth:0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 -t <registry>/nodetruth:0.1.0 --push .
#
# Four stages: `build` compiles TypeScript with the dev dependencies and bundles it
# (esbuild: dist/nodetruth.mjs and its chunks, the package's bin), `deps` installs the
# production dependencies alone, `node` is the target platform's Node image, and the
# runtime stage is debian:bookworm-slim with only that `node` binary, those dependencies,
# dist/, proto/ and a journalctl.
#
# Multi-platform: `build` and `deps` run on the builder's own platform ($BUILDPLATFORM)
# whatever the target, since what they make is the same on every platform: JavaScript,
# and production dependencies with no native code Node loads (the only binaries in them,
# bare-fs's and bare-url's prebuilds, ship every platform's in the package and are for the
# Bare runtime, never Node's). So an arm64 image built on amd64 emulates only the runtime
# stage's two RUN steps. Every stage names its platform: buildah 1.28 (Debian 12's) gives
# a stage without --platform the platform of the stage before it.
# test/deploy/dockerfile.test.ts checks that everything copied here exists and runs the
# `deps` stage's command and the entrypoint from a production install.

ARG NODE_IMAGE=node:24-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------- build
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the `node` devDependency's preinstall would download a second
# Node 24 (this image has one), and `prepare` would build before the sources are here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json
# The bundle `nodetruth` runs: Node reads a few files instead of ~480 modules at start
# (bench/RESULTS.md, "start-up"). esbuild's binary comes from its platform package
# (@esbuild/linux-x64 on an amd64 builder, an optional dependency npm installs like any
# other; it runs here only, on the builder's platform); its install
# script, skipped here, only checks that package.
COPY scripts/bundle.mjs ./scripts/
RUN node scripts/bundle.mjs

# ---------------------------------------------------------------- deps
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: production dependencies only. --ignore-scripts: no `prepare` build (there
# is no tsc here), and no dependency needs an install script (protobufjs's postinstall
# only prints a version-scheme warning). Then drop what Node never loads at run time:
# type declarations, TypeScript sources, source maps and markdown (about 45 of 105 MB,
# most of it @kubernetes/client-node's generated API); licence files stay.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && find node_modules -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.ts' -o -name '*.map' -o -name '*.md' \) -delete \
 && npm cache clean --force

# ---------------------------------------------------------------- node
# The target platform's Node 24 (its `node` binary is all the runtime takes).
FROM --platform=$TARGETPLATFORM ${NODE_IMAGE} AS node

# ---------------------------------------------------------------- runtime
FROM --platform=$TARGETPLATFORM ${DEBIAN_IMAGE}

# A journalctl for hosts whose own cannot be used. nodetruth prefers the host's
# journalctl (through chroot into the host root: it reads every format its journald
# writes) and falls back to this one with --root=/host: distroless or immutable hosts
# (Bottlerocket, Talos, COS), hosts without systemd tools, or a host binary that will
# not run here. It is Debian's own, from the systemd package (journalctl 252, with
# PCRE2 --grep and lz4/xz/zstd; it reads the compact journal files of systemd >= 252):
# the same journalctl the test suite runs against. The package adds about 21 MB, with
# its dependencies; copying journalctl and hand-picked libraries out of it would save
# about 12 MB but break quietly on the next library bump, and be per-architecture.
# chroot (coreutils) is already in the base image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends systemd \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log

# Node 24 itself, without npm, corepack and yarn: the runtime installs nothing.
# Same Debian release as NODE_IMAGE, so its libstdc++ and glibc are the ones it was built for.
COPY --from=node /usr/local/bin/node /usr/local/bin/node

WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY proto ./proto
# Node's compile cache: V8's code for the bundle's files, made here once by `nodetruth
# version`, so a start reads it instead of parsing them again. Node caches what it compiles
# when it loads a file (each file's top level, not the functions it later runs), so the
# files `version` loads (the entry, the CLI, and the chunks they share with serve:
# zod, config) are the ones that count; a whole `serve` start caches no more that matters
# (bench/RESULTS.md, "start-up"). Node reads it on a read-only root filesystem too (it only
# skips writing), as the user who made it (uid 0: Node keys the directory by uid); an entry
# made for other source text or by another Node is ignored, never used.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
# `nodetruth` on PATH: kubectl debug ... -- nodetruth serve runs it as the command.
RUN chmod 0755 dist/nodetruth.mjs \
 && ln -s /app/dist/nodetruth.mjs /usr/local/bin/nodetruth \
 && nodetruth version

LABEL org.opencontainers.image.title="nodetruth" \
      org.opencontainers.image.description="Read-only agent that tells what a Kubernetes node is really doing: CRI runtime, cgroup v2, /proc, journal, kernel log." \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/nodetruth/nodetruth" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"

ENV NODE_ENV=production \
    NODETRUTH_HOST_ROOT=/host

# Root, on purpose. nodetruth reads /proc/<pid> of processes that belong to other users
# (the ns/* links and more need ptrace-mode access: the same user, or CAP_SYS_PTRACE;
# hidepid=2 hides other users' processes altogether), the CRI socket (/run/containerd/containerd.sock is root:root 0660), the
# journal files (root:systemd-journal 0640), /dev/kmsg (CAP_SYSLOG under
# dmesg_restrict) and runs chroot for the host's journalctl (CAP_SYS_CHROOT). None of
# that works as another user, and nodetruth writes nothing: mount the host read-only.
USER 0:0

EXPOSE 7070

# Docker and Podman run this; Kubernetes ignores it (the manifests have their own probes).
# It asks the address nodetruth listens on (NODETRUTH_LISTEN, default 127.0.0.1:7070; a
# wildcard address is asked on loopback). /healthz is open even with --auth kubernetes.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "const a=(process.env.NODETRUTH_LISTEN||'127.0.0.1:7070').replace(/^(0\\.0\\.0\\.0|\\[::\\]):/,'127.0.0.1:');fetch('http://'+a+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

ENTRYPOINT ["nodetruth"]
CMD ["serve"]
