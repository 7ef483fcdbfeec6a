// A seccomp filter for bubblewrap (--seccomp FD: raw struct sock_filter[]) that refuses the kernel keyring
// calls (add_key, request_key, keyctl) with EPERM and allows everything else. Why: a sandboxed program
// inherits the server's session keyring and, through the user namespace, runs as the server's kernel uid, so
// without this it reads every key the server's session holds (an SSH login's keyring, cached credentials).
// Docker's default profile refuses the same calls. Built by hand (no libseccomp) for the two architectures
// rlpipe serves on; a process switching to the 32-bit ABI (or x32) is covered too.

/** struct seccomp_data: the syscall number at offset 0, the AUDIT_ARCH_* value at offset 4. */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const X32_SYSCALL_BIT = 0x40000000;

/** Keyring syscall numbers per audit architecture (add_key, request_key, keyctl). */
const KEYRING_SYSCALLS: Record<string, readonly { readonly arch: number; readonly nrs: readonly number[] }[]> = {
  x64: [
    { arch: 0xc000003e, nrs: [248, 249, 250, 248 | X32_SYSCALL_BIT, 249 | X32_SYSCALL_BIT, 250 | X32_SYSCALL_BIT] }, // x86_64 and x32
    { arch: 0x40000003, nrs: [286, 287, 288] }, // i386
  ],
  arm64: [
    { arch: 0xc00000b7, nrs: [217, 218, 219] }, // aarch64
    { arch: 0x40000028, nrs: [309, 310, 311] }, // arm (EABI)
  ],
};

interface Insn { code: number; jt: number; jf: number; k: number }

/** The filter for `arch` (Node's process.arch), or undefined where rlpipe has no syscall table for it. */
export function keyringFilter(arch: string = process.arch): Buffer | undefined {
  const blocks = KEYRING_SYSCALLS[arch];
  if (blocks === undefined) return undefined;
  const prog: (Insn | { deny: true; code: number; jf: number; k: number })[] = [{ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: ARCH_OFFSET }];
  for (const { arch: auditArch, nrs } of blocks) {
    // jeq arch ? fall into this block : skip it (load nr, one test per syscall, allow).
    prog.push({ code: BPF_JEQ_K, jt: 0, jf: 1 + nrs.length + 1, k: auditArch });
    prog.push({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: NR_OFFSET });
    for (const nr of nrs) prog.push({ deny: true, code: BPF_JEQ_K, jf: 0, k: nr });
    prog.push({ code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW });
  }
  prog.push({ code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW }); // another ABI: nothing to refuse
  const denyAt = prog.length;
  prog.push({ code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ERRNO | EPERM });
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach((insn, i) => {
    const jt = "deny" in insn ? denyAt - i - 1 : insn.jt;
    if (jt > 255) throw new Error("seccomp filter too long for a conditional jump"); // cannot happen with these tables
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(insn.jf, i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}
