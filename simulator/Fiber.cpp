//===- Fiber.cpp - cooperative stack switching ----------------------------===//
#include "simulator/Fiber.h"

#include <cstdint>

#if defined(__x86_64__)
// tegula_sim_switch(void **saveSp, void *loadSp): push the System V
// callee-saved registers, save rsp, load the other stack, pop, return into it.
extern "C" void tegula_sim_switch(void **saveSp, void *loadSp);
asm(R"(
  .text
  .globl tegula_sim_switch
  .hidden tegula_sim_switch
  .type tegula_sim_switch, @function
tegula_sim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tegula_sim_switch, .-tegula_sim_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");
#endif

namespace tegula::sim {

#if defined(__x86_64__)
void fiberInit(Fiber &fiber, char *stack, size_t bytes, void (*entry)()) {
  // From the 16-byte aligned top: a null return address (entry never
  // returns), entry's address for tegula_sim_switch's `ret`, six zeroed
  // registers. At entry rsp + 8 is 16-byte aligned, as after a call.
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15);
  auto *slot = reinterpret_cast<void **>(top);
  *--slot = nullptr;
  *--slot = reinterpret_cast<void *>(entry);
  for (int i = 0; i < 6; ++i)
    *--slot = nullptr;
  fiber.sp = slot;
}

void fiberSwitch(Fiber &from, Fiber &to) { tegula_sim_switch(&from.sp, to.sp); }
#else
void fiberInit(Fiber &fiber, char *stack, size_t bytes, void (*entry)()) {
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack;
  fiber.context.uc_stack.ss_size = bytes;
  fiber.context.uc_link = nullptr;
  makecontext(&fiber.context, entry, 0);
}

void fiberSwitch(Fiber &from, Fiber &to) { swapcontext(&from.context, &to.context); }
#endif

} // namespace tegula::sim
