/**
 * The seccomp programs, run on a small classic-BPF interpreter (the four instructions they use),
 * for each described architecture: every refused call gets EPERM, other calls pass, another ABI
 * (x32 on x86_64, AArch32 or x86 on aarch64) is killed. The aarch64 program cannot run on this
 * machine's kernel; this is what checks it.
 */
import { describe, expect, it } from "vitest";
import { ARCHITECTURES, REFUSED, seccompProgram } from "./seccomp.js";

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const KILL = 0x80000000;
const AUDIT_ARCH_I386 = 0x40000003;
const AUDIT_ARCH_ARM = 0x40000028;

/** What `program` returns for a call `nr` made through architecture `arch` (struct seccomp_data). */
function run(program: Buffer, arch: number, nr: number): number {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(nr >>> 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  let acc = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = data.readUInt32LE(k);
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`unexpected BPF code ${code}`);
  }
  throw new Error("fell off the program");
}

describe("seccompProgram", () => {
  const cases = [
    { arch: "x64" as const, audit: 0xc000003e, allowed: { read: 0, write: 1, execve: 59, clone: 56, openat: 257 }, foreign: AUDIT_ARCH_I386 },
    { arch: "arm64" as const, audit: 0xc00000b7, allowed: { read: 63, write: 64, execve: 221, clone: 220, openat: 56 }, foreign: AUDIT_ARCH_ARM },
  ];
  for (const c of cases) {
    it(`${c.arch}: refuses the listed calls with EPERM, lets others through, kills another ABI`, () => {
      const program = seccompProgram(c.arch)!;
      for (const [name, nr] of Object.entries(REFUSED)) expect(run(program, c.audit, nr[c.arch]), name).toBe(EPERM);
      for (const [name, nr] of Object.entries(c.allowed)) expect(run(program, c.audit, nr), name).toBe(ALLOW);
      expect(run(program, c.foreign, c.allowed.read)).toBe(KILL);
    });
  }

  it("refuses ptrace and process_vm_readv/writev on both architectures (a tool attaching to its own agent)", () => {
    // The numbers as the kernel's tables give them (arch/x86/entry/syscalls/syscall_64.tbl,
    // include/uapi/asm-generic/unistd.h), written out here rather than read from REFUSED.
    const numbers = { x64: { ptrace: 101, process_vm_readv: 310, process_vm_writev: 311 }, arm64: { ptrace: 117, process_vm_readv: 270, process_vm_writev: 271 } };
    for (const c of cases) {
      const program = seccompProgram(c.arch)!;
      for (const [name, nr] of Object.entries(numbers[c.arch])) expect(run(program, c.audit, nr), `${c.arch} ${name}`).toBe(EPERM);
    }
  });

  it("kills x32 calls on x86_64", () => {
    expect(run(seccompProgram("x64")!, 0xc000003e, 0x40000000 | 0)).toBe(KILL);
  });

  it("is described for x86_64 and aarch64 only", () => {
    expect(Object.keys(ARCHITECTURES).sort()).toEqual(["arm64", "x64"]);
    expect(seccompProgram("riscv64")).toBeUndefined();
  });
});
