// The platforms the ctxgate binary is published for, one npm package each
// (as esbuild and biome do): the main package lists them all as
// optionalDependencies, and npm installs the one whose os, cpu and libc
// fields match the machine. binary.js finds it at run time;
// scripts/platform-package.mjs assembles one from a built binary. This table
// is the one place both read.

/** package name → npm's os/cpu/libc fields, the Rust target it is built for, and the binary's file name. */
export const PLATFORMS = Object.freeze({
  '@ctxgate/linux-x64-gnu': { os: 'linux', cpu: 'x64', libc: 'glibc', target: 'x86_64-unknown-linux-gnu', exe: 'ctxgate' },
  '@ctxgate/linux-arm64-gnu': { os: 'linux', cpu: 'arm64', libc: 'glibc', target: 'aarch64-unknown-linux-gnu', exe: 'ctxgate' },
  '@ctxgate/darwin-x64': { os: 'darwin', cpu: 'x64', target: 'x86_64-apple-darwin', exe: 'ctxgate' },
  '@ctxgate/darwin-arm64': { os: 'darwin', cpu: 'arm64', target: 'aarch64-apple-darwin', exe: 'ctxgate' },
  '@ctxgate/win32-x64-msvc': { os: 'win32', cpu: 'x64', target: 'x86_64-pc-windows-msvc', exe: 'ctxgate.exe' },
});

/**
 * The C library of this Linux process: 'glibc' or 'musl' (npm's names), or
 * null off Linux. Node's own report says which glibc it runs on, when it
 * does (the way npm and detect-libc tell them apart).
 */
export function libcOf(platform = process.platform) {
  if (platform !== 'linux') return null;
  const header = process.report?.getReport?.().header;
  return header && header.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** This machine, as `os-cpu[-libc]` (e.g. `linux-x64-glibc`, `darwin-arm64`), for messages. */
export function describe(platform = process.platform, arch = process.arch, libc = libcOf(platform)) {
  return [platform, arch, libc].filter(Boolean).join('-');
}

/** The package name for a platform, or null when none is published for it. */
export function packageFor(platform = process.platform, arch = process.arch, libc = libcOf(platform)) {
  for (const [name, p] of Object.entries(PLATFORMS)) {
    if (p.os === platform && p.cpu === arch && (p.libc === undefined || p.libc === libc)) return name;
  }
  return null;
}
