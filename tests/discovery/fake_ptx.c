/* See fake_ptx.h. Registers hold 64 bits; .u32 and .f32 operations use the
 * low 32 (floats as their IEEE bits), as PTX defines them. */
#include "fake_ptx.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxRegs = 96, kMaxParams = 8, kMaxInsns = 512, kMaxLabels = 32, kMaxKernels = 8, kNameSize = 64 };

enum OperandKind { kNone, kReg, kImm, kTidX, kNtidX, kCtaidX, kParam, kMem, kLabel };
struct Operand {
  enum OperandKind kind;
  int reg;        /* kReg, kMem (the address register) */
  uint64_t imm;   /* kImm */
  int param;      /* kParam */
  char label[kNameSize];
};

enum Op {
  kLdParam, kMov, kMadLo, kSetpGt, kSetpEq, kBra, kCvtU64U32, kCvtF32U32, kMulLo, kMulWide, kMulF32,
  kAdd, kAddF32, kSub, kXor, kOr, kShl, kShr, kFma, kCvta, kSt, kRet
};
struct Insn {
  enum Op op;
  int wide;        /* 64-bit integer operation */
  int pred;        /* guarding predicate register, or -1 */
  int line;
  int target;      /* kBra: instruction index */
  struct Operand d, a, b, c;
};

struct FakePtxKernel {
  char name[kNameSize];
  char params[kMaxParams][kNameSize];
  int param_wide[kMaxParams];
  int param_count;
  char regs[kMaxRegs][16];
  int reg_count;
  struct Insn insns[kMaxInsns];
  int insn_count;
};
struct FakePtxModule {
  struct FakePtxKernel kernels[kMaxKernels];
  int kernel_count;
};

static void Say(char* error, size_t size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error, size, format, args);
  va_end(args);
}

static int RegIndex(struct FakePtxKernel* k, const char* name) {
  for (int i = 0; i < k->reg_count; ++i) {
    if (strcmp(k->regs[i], name) == 0) return i;
  }
  if (k->reg_count == kMaxRegs || strlen(name) >= sizeof(k->regs[0])) return -1;
  strcpy(k->regs[k->reg_count], name);
  return k->reg_count++;
}

/* One operand's text, trimmed. 0 if it is not one this subset knows. */
static int ParseOperand(struct FakePtxKernel* k, char* text, struct Operand* out) {
  while (isspace((unsigned char)*text)) ++text;
  size_t n = strlen(text);
  while (n > 0 && isspace((unsigned char)text[n - 1])) text[--n] = '\0';
  memset(out, 0, sizeof(*out));
  if (n == 0) return 0;
  if (text[0] == '[') {
    if (text[n - 1] != ']') return 0;
    text[n - 1] = '\0';
    ++text;
    if (text[0] == '%') {
      out->kind = kMem;
      out->reg = RegIndex(k, text);
      return out->reg >= 0;
    }
    for (int i = 0; i < k->param_count; ++i) {
      if (strcmp(k->params[i], text) == 0) {
        out->kind = kParam;
        out->param = i;
        return 1;
      }
    }
    return 0;
  }
  if (strcmp(text, "%tid.x") == 0) return out->kind = kTidX, 1;
  if (strcmp(text, "%ntid.x") == 0) return out->kind = kNtidX, 1;
  if (strcmp(text, "%ctaid.x") == 0) return out->kind = kCtaidX, 1;
  if (text[0] == '%') {
    out->kind = kReg;
    out->reg = RegIndex(k, text);
    return out->reg >= 0;
  }
  if (text[0] == '0' && text[1] == 'f' && n == 10) { /* 0fXXXXXXXX: a float's bits */
    out->kind = kImm;
    out->imm = strtoull(text + 2, NULL, 16);
    return 1;
  }
  if (isdigit((unsigned char)text[0]) || text[0] == '-') {
    char* end = NULL;
    out->kind = kImm;
    out->imm = text[0] == '-' ? (uint64_t)strtoll(text, &end, 0) : strtoull(text, &end, 0);
    if (*end == 'U') ++end;
    return *end == '\0';
  }
  if (isalpha((unsigned char)text[0]) || text[0] == '_' || text[0] == '$') {
    out->kind = kLabel;
    snprintf(out->label, sizeof(out->label), "%s", text);
    return 1;
  }
  return 0;
}

struct OpName {
  const char* name;
  enum Op op;
  int wide;
  int operands;
};
static const struct OpName kOps[] = {
    {"ld.param.u64", kLdParam, 1, 2}, {"ld.param.u32", kLdParam, 0, 2}, {"mov.u32", kMov, 0, 2},
    {"mov.u64", kMov, 1, 2},          {"mov.f32", kMov, 0, 2},          {"mad.lo.u32", kMadLo, 0, 4},
    {"setp.gt.u32", kSetpGt, 0, 3},   {"setp.eq.u32", kSetpEq, 0, 3},   {"setp.eq.u64", kSetpEq, 1, 3},
    {"bra", kBra, 0, 1},              {"cvt.u64.u32", kCvtU64U32, 0, 2}, {"cvt.rn.f32.u32", kCvtF32U32, 0, 2},
    {"mul.lo.u64", kMulLo, 1, 3},     {"mul.wide.u32", kMulWide, 0, 3}, {"mul.f32", kMulF32, 0, 3},
    {"add.u64", kAdd, 1, 3},          {"add.f32", kAddF32, 0, 3},       {"sub.u64", kSub, 1, 3},
    {"sub.u32", kSub, 0, 3},          {"xor.b64", kXor, 1, 3},          {"or.b64", kOr, 1, 3},
    {"shl.b64", kShl, 1, 3},          {"shr.u64", kShr, 1, 3},          {"fma.rn.f32", kFma, 0, 4},
    {"cvta.to.global.u64", kCvta, 1, 2}, {"st.global.u64", kSt, 1, 2},  {"st.global.f32", kSt, 0, 2},
    {"ret", kRet, 0, 0},
};

/* One instruction line ("@%p1 bra L;", "add.u64 %rd1, %rd2, 5;"). */
static int ParseInsn(struct FakePtxKernel* k, char* line, int line_number, char* error, size_t size) {
  if (k->insn_count == kMaxInsns) return Say(error, size, "line %d: too many instructions", line_number), 0;
  struct Insn* insn = &k->insns[k->insn_count];
  memset(insn, 0, sizeof(*insn));
  insn->pred = -1;
  insn->line = line_number;
  char* semicolon = strchr(line, ';');
  if (semicolon == NULL || semicolon[1] != '\0') return Say(error, size, "line %d: expected one statement ended by ';'", line_number), 0;
  *semicolon = '\0';
  if (line[0] == '@') {
    char* space = strchr(line, ' ');
    if (space == NULL || line[1] != '%') return Say(error, size, "line %d: bad predicate", line_number), 0;
    *space = '\0';
    insn->pred = RegIndex(k, line + 1);
    line = space + 1;
    while (isspace((unsigned char)*line)) ++line;
  }
  char* rest = line;
  while (*rest != '\0' && !isspace((unsigned char)*rest)) ++rest;
  if (*rest != '\0') *rest++ = '\0';
  const struct OpName* found = NULL;
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (strcmp(kOps[i].name, line) == 0) found = &kOps[i];
  }
  if (found == NULL) return Say(error, size, "line %d: instruction %s is outside the fake driver's PTX subset", line_number, line), 0;
  insn->op = found->op;
  insn->wide = found->wide;
  struct Operand* slots[4] = {&insn->d, &insn->a, &insn->b, &insn->c};
  int count = 0;
  for (char* token = strtok(rest, ","); token != NULL; token = strtok(NULL, ",")) {
    if (count == 4 || !ParseOperand(k, token, slots[count])) {
      return Say(error, size, "line %d: bad operand '%s' for %s", line_number, token, found->name), 0;
    }
    ++count;
  }
  if (count != found->operands) return Say(error, size, "line %d: %s takes %d operands", line_number, found->name, found->operands), 0;
  ++k->insn_count;
  return 1;
}

static int ResolveLabels(struct FakePtxKernel* k, char labels[][kNameSize], const int* at, int count, char* error, size_t size) {
  for (int i = 0; i < k->insn_count; ++i) {
    struct Insn* insn = &k->insns[i];
    if (insn->op != kBra) continue;
    insn->target = -1;
    for (int l = 0; l < count; ++l) {
      if (insn->d.kind == kLabel && strcmp(labels[l], insn->d.label) == 0) insn->target = at[l];
    }
    if (insn->target < 0) return Say(error, size, "line %d: no label %s", insn->line, insn->d.label), 0;
  }
  return 1;
}

/* Trims comments and space in place; returns the trimmed start. */
static char* Clean(char* line) {
  char* comment = strstr(line, "//");
  if (comment != NULL) *comment = '\0';
  while (isspace((unsigned char)*line)) ++line;
  size_t n = strlen(line);
  while (n > 0 && isspace((unsigned char)line[n - 1])) line[--n] = '\0';
  return line;
}

struct FakePtxModule* FakePtxLoad(const char* text, int max_isa, int* unsupported, char* error, size_t size) {
  *unsupported = 0;
  struct FakePtxModule* m = calloc(1, sizeof(*m));
  char* copy = strdup(text);
  struct FakePtxKernel* k = NULL;
  char labels[kMaxLabels][kNameSize];
  int label_at[kMaxLabels];
  int label_count = 0, in_params = 0, in_body = 0, seen_version = 0, ok = 1, line_number = 0;
  char* save = NULL;
  for (char* raw = strtok_r(copy, "\n", &save); ok && raw != NULL; raw = strtok_r(NULL, "\n", &save)) {
    ++line_number;
    char* line = Clean(raw);
    if (*line == '\0') continue;
    int major = 0, minor = 0;
    if (sscanf(line, ".version %d.%d", &major, &minor) == 2) {
      seen_version = 1;
      if (major * 10 + minor > max_isa) {
        *unsupported = 1;
        Say(error, size, "PTX ISA %d.%d is newer than this driver's %d.%d", major, minor, max_isa / 10, max_isa % 10);
        ok = 0;
      }
    } else if (strncmp(line, ".target", 7) == 0 || strncmp(line, ".address_size", 13) == 0 ||
               strncmp(line, ".reg", 4) == 0) {
      /* registers are named as they are used */
    } else if (strncmp(line, ".visible .entry ", 16) == 0) {
      if (m->kernel_count == kMaxKernels) break;
      k = &m->kernels[m->kernel_count++];
      snprintf(k->name, sizeof(k->name), "%.*s", (int)strcspn(line + 16, "("), line + 16);
      in_params = 1;
      label_count = 0;
    } else if (in_params && strncmp(line, ".param .u", 9) == 0 && k->param_count < kMaxParams) {
      k->param_wide[k->param_count] = strncmp(line, ".param .u64 ", 12) == 0;
      snprintf(k->params[k->param_count++], kNameSize, "%.*s", (int)strcspn(line + 12, ","), line + 12);
    } else if (in_params && strcmp(line, ")") == 0) {
      in_params = 0;
    } else if (k != NULL && strcmp(line, "{") == 0) {
      in_body = 1;
    } else if (in_body && strcmp(line, "}") == 0) {
      in_body = 0;
      ok = ResolveLabels(k, labels, label_at, label_count, error, size);
    } else if (in_body && line[strlen(line) - 1] == ':' && label_count < kMaxLabels) {
      snprintf(labels[label_count], kNameSize, "%.*s", (int)strlen(line) - 1, line);
      label_at[label_count++] = k->insn_count;
    } else if (in_body) {
      ok = ParseInsn(k, line, line_number, error, size);
    } else {
      Say(error, size, "line %d: '%s' is outside the fake driver's PTX subset", line_number, line);
      ok = 0;
    }
  }
  free(copy);
  if (ok && !seen_version) {
    Say(error, size, "no .version directive");
    ok = 0;
  }
  if (!ok) {
    free(m);
    return NULL;
  }
  return m;
}

void FakePtxUnload(struct FakePtxModule* module) { free(module); }

const struct FakePtxKernel* FakePtxFind(const struct FakePtxModule* m, const char* name) {
  for (int i = 0; i < m->kernel_count; ++i) {
    if (strcmp(m->kernels[i].name, name) == 0) return &m->kernels[i];
  }
  return NULL;
}

static float AsFloat(uint64_t bits) {
  uint32_t low = (uint32_t)bits;
  float f;
  memcpy(&f, &low, sizeof(f));
  return f;
}
static uint64_t FromFloat(float f) {
  uint32_t low;
  memcpy(&low, &f, sizeof(low));
  return low;
}

struct Thread {
  uint64_t regs[kMaxRegs];
  unsigned tid, ntid, ctaid;
  void** params;
  const struct FakePtxKernel* kernel;
};

static uint64_t Value(const struct Thread* t, const struct Operand* o, int wide) {
  uint64_t v = 0;
  switch (o->kind) {
    case kReg: v = t->regs[o->reg]; break;
    case kImm: v = o->imm; break;
    case kTidX: v = t->tid; break;
    case kNtidX: v = t->ntid; break;
    case kCtaidX: v = t->ctaid; break;
    case kParam:
      if (t->kernel->param_wide[o->param]) {
        memcpy(&v, t->params[o->param], 8);
      } else {
        uint32_t low;
        memcpy(&low, t->params[o->param], 4);
        v = low;
      }
      break;
    default: break;
  }
  return wide ? v : (uint32_t)v;
}

static uint64_t Shift(uint64_t v, uint64_t amount, int left) {
  if (amount >= 64) return 0; /* PTX clamps shift amounts to the width */
  return left ? v << amount : v >> amount;
}

/* Runs one thread to its ret. */
static int RunThread(struct Thread* t, FakePtxTranslate translate, char* error, size_t size) {
  const struct FakePtxKernel* k = t->kernel;
  for (int pc = 0; pc < k->insn_count;) {
    const struct Insn* i = &k->insns[pc++];
    if (i->pred >= 0 && t->regs[i->pred] == 0) continue;
    const int w = i->wide;
    uint64_t* d = &t->regs[i->d.reg];
    switch (i->op) {
      case kLdParam: *d = Value(t, &i->a, w); break;
      case kMov: *d = Value(t, &i->a, w); break;
      case kMadLo: *d = (uint32_t)(Value(t, &i->a, 0) * Value(t, &i->b, 0) + Value(t, &i->c, 0)); break;
      case kSetpGt: *d = Value(t, &i->a, w) > Value(t, &i->b, w); break;
      case kSetpEq: *d = Value(t, &i->a, w) == Value(t, &i->b, w); break;
      case kBra: pc = i->target; break;
      case kCvtU64U32: *d = Value(t, &i->a, 0); break;
      case kCvtF32U32: *d = FromFloat((float)(uint32_t)Value(t, &i->a, 0)); break;
      case kMulLo: *d = Value(t, &i->a, 1) * Value(t, &i->b, 1); break;
      case kMulWide: *d = Value(t, &i->a, 0) * Value(t, &i->b, 0); break;
      case kMulF32: *d = FromFloat(AsFloat(Value(t, &i->a, 0)) * AsFloat(Value(t, &i->b, 0))); break;
      case kAdd: *d = w ? Value(t, &i->a, 1) + Value(t, &i->b, 1) : (uint32_t)(Value(t, &i->a, 0) + Value(t, &i->b, 0)); break;
      case kAddF32: *d = FromFloat(AsFloat(Value(t, &i->a, 0)) + AsFloat(Value(t, &i->b, 0))); break;
      case kSub: *d = w ? Value(t, &i->a, 1) - Value(t, &i->b, 1) : (uint32_t)(Value(t, &i->a, 0) - Value(t, &i->b, 0)); break;
      case kXor: *d = Value(t, &i->a, 1) ^ Value(t, &i->b, 1); break;
      case kOr: *d = Value(t, &i->a, 1) | Value(t, &i->b, 1); break;
      case kShl: *d = Shift(Value(t, &i->a, 1), Value(t, &i->b, 0), 1); break;
      case kShr: *d = Shift(Value(t, &i->a, 1), Value(t, &i->b, 0), 0); break;
      case kFma:
        *d = FromFloat(fmaf(AsFloat(Value(t, &i->a, 0)), AsFloat(Value(t, &i->b, 0)), AsFloat(Value(t, &i->c, 0))));
        break;
      case kCvta: *d = Value(t, &i->a, 1); break;
      case kSt: {
        const uint64_t address = t->regs[i->d.reg];
        const size_t bytes = w ? 8 : 4;
        void* host = translate(address, bytes);
        if (host == NULL) return Say(error, size, "line %d: store to 0x%llx outside any allocation", i->line, (unsigned long long)address), -1;
        const uint64_t v = Value(t, &i->a, w);
        memcpy(host, &v, bytes); /* little-endian: the low bytes */
        break;
      }
      case kRet: return 0;
    }
  }
  return 0;
}

int FakePtxRun(const struct FakePtxKernel* kernel, unsigned grid, unsigned block, void** params,
               FakePtxTranslate translate, char* error, size_t size) {
  struct Thread t;
  memset(&t, 0, sizeof(t));
  t.kernel = kernel;
  t.params = params;
  t.ntid = block;
  for (unsigned c = 0; c < grid; ++c) {
    for (unsigned x = 0; x < block; ++x) {
      t.ctaid = c;
      t.tid = x;
      if (RunThread(&t, translate, error, size) != 0) return -1;
    }
  }
  return 0;
}
