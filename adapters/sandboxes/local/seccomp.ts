// The seccomp filters of every sandbox (raw struct sock_filter[]). bubblewrap installs the sandbox's (--seccomp FD):
// the kernel keyring refused. Each manager, having given its program namespaces of its own (harness/reset.py), installs
// the program's before any program code runs (/opt/rlpipe/program.bpf), which refuses:
//   * the kernel keyring calls (add_key, request_key, keyctl) with EPERM: a sandboxed program inherits the server's
//     session keyring and, through the user namespace, runs as the server's kernel uid, so without this it reads
//     every key the server's session holds (an SSH login's keyring, cached credentials). Docker refuses the same.
//   * new namespaces: unshare and clone with any CLONE_NEW* flag, and setns, with EPERM; clone3 with ENOSYS (its
//     flags live in a struct a filter cannot read; the C library then falls back to clone). A user namespace would
//     give a program every capability over namespaces of its own (a PID namespace to hide from the clean-up, mounts
//     over its view); no language rlpipe runs needs one.
// Everything else is allowed. Built by hand (no libseccomp) for the two architectures rlpipe serves on; a process
// switching to the 32-bit ABI (or x32) is covered too.

/** struct seccomp_data: the syscall number at offset 0, the AUDIT_ARCH_* value at 4, args[0] at 16 (its low word: little endian). */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
const ARG0_LOW_OFFSET = 16;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const X32_SYSCALL_BIT = 0x40000000;

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. */
const CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** unshare also takes CLONE_NEWTIME (0x80), which in clone's flags is part of the exit signal. */
const UNSHARE_NEW_FLAGS = CLONE_NEW_FLAGS | 0x00000080;

interface AbiSyscalls {
  readonly arch: number;
  /** Added to every number (x32 shares x86_64's audit arch and sets this bit). */
  readonly bit?: number;
  readonly keyring: readonly number[];
  readonly clone: number;
  readonly unshare: number;
  readonly setns: number;
  readonly clone3: number;
}

/** Syscall numbers per ABI of each Node architecture. */
const ABIS: Record<string, readonly AbiSyscalls[]> = {
  x64: [
    { arch: 0xc000003e, keyring: [248, 249, 250], clone: 56, unshare: 272, setns: 308, clone3: 435 }, // x86_64
    { arch: 0xc000003e, bit: X32_SYSCALL_BIT, keyring: [248, 249, 250], clone: 56, unshare: 272, setns: 308, clone3: 435 }, // x32
    { arch: 0x40000003, keyring: [286, 287, 288], clone: 120, unshare: 310, setns: 346, clone3: 435 }, // i386
  ],
  arm64: [
    { arch: 0xc00000b7, keyring: [217, 218, 219], clone: 220, unshare: 97, setns: 268, clone3: 435 }, // aarch64
    { arch: 0x40000028, keyring: [309, 310, 311], clone: 120, unshare: 337, setns: 375, clone3: 435 }, // arm (EABI)
  ],
};

/** An instruction whose jump targets are labels, resolved when the program is assembled. */
interface Insn { readonly code: number; readonly k: number; readonly jt?: string; readonly jf?: string; readonly label?: string }

const ALLOW = "allow";
const DENY_EPERM = "eperm";
const DENY_ENOSYS = "enosys";

/**
 * The filter for `arch` (Node's process.arch), or undefined where rlpipe has no syscall table for it. `namespaces`:
 * refuse new namespaces too (the program's filter); without it, only the keyring (the sandbox's, so that a manager can
 * give its program namespaces of its own).
 */
export function sandboxFilter(arch: string = process.arch, opts: { readonly namespaces?: boolean } = { namespaces: true }): Buffer | undefined {
  const namespaces = opts.namespaces !== false;
  const abis = ABIS[arch];
  if (abis === undefined) return undefined;
  // One block per audit arch: load nr once, then test every number of each ABI sharing that arch.
  const archs = [...new Set(abis.map((a) => a.arch))];
  const prog: Insn[] = [{ code: BPF_LD_W_ABS, k: ARCH_OFFSET }];
  archs.forEach((auditArch, b) => {
    const next = b + 1 < archs.length ? `arch${b + 1}` : ALLOW;
    prog.push({ code: BPF_JEQ_K, k: auditArch, jf: next });
    prog.push({ code: BPF_LD_W_ABS, k: NR_OFFSET });
    for (const abi of abis.filter((a) => a.arch === auditArch)) {
      const nr = (n: number) => (n | (abi.bit ?? 0)) >>> 0;
      for (const n of abi.keyring) prog.push({ code: BPF_JEQ_K, k: nr(n), jt: DENY_EPERM });
      if (!namespaces) continue;
      prog.push({ code: BPF_JEQ_K, k: nr(abi.setns), jt: DENY_EPERM });
      prog.push({ code: BPF_JEQ_K, k: nr(abi.clone3), jt: DENY_ENOSYS });
      prog.push({ code: BPF_JEQ_K, k: nr(abi.unshare), jt: "unshare" });
      prog.push({ code: BPF_JEQ_K, k: nr(abi.clone), jt: "clone" });
    }
    prog.push({ code: BPF_RET_K, k: SECCOMP_RET_ALLOW });
    if (b + 1 < archs.length) prog.push({ code: BPF_LD_W_ABS, k: ARCH_OFFSET, label: `arch${b + 1}` });
  });
  if (namespaces) {
    prog.push({ code: BPF_LD_W_ABS, k: ARG0_LOW_OFFSET, label: "unshare" });
    prog.push({ code: BPF_JSET_K, k: UNSHARE_NEW_FLAGS, jt: DENY_EPERM });
    prog.push({ code: BPF_RET_K, k: SECCOMP_RET_ALLOW });
    prog.push({ code: BPF_LD_W_ABS, k: ARG0_LOW_OFFSET, label: "clone" });
    prog.push({ code: BPF_JSET_K, k: CLONE_NEW_FLAGS, jt: DENY_EPERM });
  }
  prog.push({ code: BPF_RET_K, k: SECCOMP_RET_ALLOW, label: ALLOW });
  prog.push({ code: BPF_RET_K, k: SECCOMP_RET_ERRNO | EPERM, label: DENY_EPERM });
  if (namespaces) prog.push({ code: BPF_RET_K, k: SECCOMP_RET_ERRNO | ENOSYS, label: DENY_ENOSYS });
  return assemble(prog);
}

function assemble(prog: readonly Insn[]): Buffer {
  const at = new Map(prog.flatMap((insn, i) => (insn.label === undefined ? [] : [[insn.label, i] as const])));
  const offset = (from: number, label: string | undefined): number => {
    if (label === undefined) return 0;
    const to = at.get(label);
    if (to === undefined || to <= from || to - from - 1 > 255) throw new Error(`seccomp filter: bad jump to ${label}`); // a bug in the tables above
    return to - from - 1;
  };
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach((insn, i) => {
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(offset(i, insn.jt), i * 8 + 2);
    out.writeUInt8(offset(i, insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}
