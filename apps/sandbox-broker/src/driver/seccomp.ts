/**
 * The seccomp filter every sandbox runs under (bwrap --seccomp): a classic BPF program that
 * refuses, with EPERM, the system calls a tool never needs and a kernel exploit often does
 * (keyrings, bpf, userfaultfd, perf events, io_uring, module and kexec loading, mounts and
 * namespaces, which --cap-drop ALL and --disable-userns already deny but leave reachable as
 * kernel attack surface), and kills a process that calls through another ABI (32-bit int 0x80,
 * x32), where the numbers differ and would slip past the list. Everything else is allowed, as in
 * Docker's default profile. x86_64 and aarch64 are described (aarch64 numbers from the kernel's
 * generic table, include/uapi/asm-generic/unistd.h; it has no x32, and AArch32 calls carry another
 * arch and are killed); elsewhere sandboxes run without a filter and the broker says so at start.
 */

/** struct seccomp_data: nr at 0, arch at 4. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/** x32 system calls have this bit set in nr. */
const X32_SYSCALL_BIT = 0x40000000;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;

const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const EPERM = 1;
const RET_EPERM = 0x00050000 | EPERM;

/** x86_64 numbers of what the filter refuses. */
export const REFUSED_X86_64 = {
  acct: 163,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  fanotify_init: 300,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  setns: 308,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  pivot_root: 155,
  mount_setattr: 442,
} as const satisfies Readonly<Record<string, number>>;

function instruction(code: number, jt: number, jf: number, k: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(code, 0);
  b.writeUInt8(jt, 2);
  b.writeUInt8(jf, 3);
  b.writeUInt32LE(k >>> 0, 4);
  return b;
}

/** aarch64 numbers of the same calls (the generic table). */
export const REFUSED_AARCH64: Readonly<Record<keyof typeof REFUSED_X86_64, number>> = {
  acct: 89,
  mount: 40,
  umount2: 39,
  swapon: 224,
  swapoff: 225,
  reboot: 142,
  init_module: 105,
  delete_module: 106,
  quotactl: 60,
  kexec_load: 104,
  add_key: 217,
  request_key: 218,
  keyctl: 219,
  unshare: 97,
  perf_event_open: 241,
  fanotify_init: 262,
  name_to_handle_at: 264,
  open_by_handle_at: 265,
  setns: 268,
  finit_module: 273,
  kexec_file_load: 294,
  bpf: 280,
  userfaultfd: 282,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  pivot_root: 41,
  mount_setattr: 442,
};

/** What the filter needs of an architecture, by Node's name for it (process.arch). */
export const ARCHITECTURES: Readonly<Record<string, { readonly audit: number; readonly refused: Readonly<Record<string, number>>; readonly x32: boolean }>> = {
  x64: { audit: AUDIT_ARCH_X86_64, refused: REFUSED_X86_64, x32: true },
  arm64: { audit: AUDIT_ARCH_AARCH64, refused: REFUSED_AARCH64, x32: false },
};

/** The filter for this machine's architecture, as bwrap reads it; undefined where none is described. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  const described = ARCHITECTURES[arch];
  if (described === undefined) return undefined;
  const refused = Object.values(described.refused);
  // Layout: load arch, arch check, load nr, [x32 check,] one jeq per refused call, then ALLOW,
  // EPERM, KILL. Jump offsets count from the next instruction.
  const head = described.x32 ? 4 : 3;
  const n = refused.length;
  const allowAt = head + n;
  const epermAt = allowAt + 1;
  const killAt = epermAt + 1;
  const program = [
    instruction(BPF_LD_W_ABS, 0, 0, OFFSET_ARCH),
    instruction(BPF_JEQ_K, 0, killAt - 2, described.audit),
    instruction(BPF_LD_W_ABS, 0, 0, OFFSET_NR),
    ...(described.x32 ? [instruction(BPF_JGE_K, killAt - 4, 0, X32_SYSCALL_BIT)] : []),
    ...refused.map((nr, i) => instruction(BPF_JEQ_K, epermAt - (head + i) - 1, 0, nr)),
    instruction(BPF_RET_K, 0, 0, RET_ALLOW),
    instruction(BPF_RET_K, 0, 0, RET_EPERM),
    instruction(BPF_RET_K, 0, 0, RET_KILL_PROCESS),
  ];
  return Buffer.concat(program);
}
