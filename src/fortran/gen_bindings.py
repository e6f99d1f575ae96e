#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fortran bindings of viaduct's MPI, generated from include/mpi.h.

mpi.h is the one description of the API: every integer constant and every
MPI_ function declared there becomes, with no second list to keep in step,

  mpif.h          the constants, sentinels and function types for `include 'mpif.h'`
                  (lines valid in fixed and free form);
  mpi.f90         the `mpi` module: the same constants plus explicit interfaces;
  mpi_fortran.c   a C wrapper per function, e.g. pmpi_send_ (with mpi_send_ a
                  weak alias) calling MPI_Send, so profiling tools see Fortran
                  calls at the C interface too.

Handles are C ints and a Fortran default INTEGER is 4 bytes, so handles,
logicals (gfortran: .TRUE. is 1) and MPI_Status (5 ints) pass unchanged;
the wrappers convert by-reference scalars to values, Fortran strings
(hidden lengths, blank padding) to C strings and back, and the Fortran
sentinels MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, MPI_UNWEIGHTED
and MPI_WEIGHTS_EMPTY (common blocks, one address per program) to the C
ones.

A function whose arguments this generator cannot map (a C callback other
than MPI_User_function, which has the Fortran calling convention already)
gets no Fortran binding and is listed in a comment of mpif.h, so the gap is
visible rather than a wrong binding.

usage: gen_bindings.py MPI_H OUTDIR
"""
import os
import re
import sys

HANDLE_TYPES = {"MPI_Comm", "MPI_Group", "MPI_Datatype", "MPI_Op", "MPI_Request",
                "MPI_Errhandler", "MPI_Info", "MPI_Win", "MPI_Message", "MPI_Fint",
                "MPI_Session", "MPI_File"}
WIDE_TYPES = {"MPI_Aint": "MPI_ADDRESS_KIND", "MPI_Offset": "MPI_OFFSET_KIND",
              "MPI_Count": "MPI_COUNT_KIND"}
# Arguments that are LOGICAL in Fortran (C int, 0 or 1).
LOGICAL_NAMES = {"flag", "periods", "reorder", "remain_dims", "commute", "high",
                 "complete", "weighted"}
# Attribute values: C passes a pointer (void *, or void ** to get one);
# Fortran an INTEGER(KIND=MPI_ADDRESS_KIND) holding the value itself.
ATTR_FUNCS = re.compile(r"^MPI_(Comm|Type|Win)_(get|set)_attr$")
# C-only functions (the standard gives them no Fortran binding).
C_ONLY = re.compile(r"^MPI_(\w+_(c2f|f2c)|Status_(c2f|f2c)\w*|Pcontrol|[A-Z_]+_FN)$")
# Bound by hand in fortran_attr.c (interfaces still generated): the MPI-1
# attribute calls, whose Fortran value is a default INTEGER.
HANDWRITTEN = {"MPI_Attr_get", "MPI_Attr_put"}
# Struct members of MPI_Status, as 1-based indices of a Fortran status.
STATUS_FIELDS = [("MPI_SOURCE", 1), ("MPI_TAG", 2), ("MPI_ERROR", 3)]
STATUS_SIZE = 5
KINDS = [("MPI_ADDRESS_KIND", 8), ("MPI_OFFSET_KIND", 8), ("MPI_COUNT_KIND", 8),
         ("MPI_INTEGER_KIND", 4)]
# Fortran sentinels: (Fortran name, common block / C symbol, Fortran
# declaration suffix, C replacement expression).
SENTINELS = [("MPI_BOTTOM", "vd_mpi_fbottom", "", "MPI_BOTTOM"),
             ("MPI_IN_PLACE", "vd_mpi_finplace", "", "MPI_IN_PLACE"),
             ("MPI_UNWEIGHTED", "vd_mpi_funweighted", "(1)", "MPI_UNWEIGHTED"),
             ("MPI_WEIGHTS_EMPTY", "vd_mpi_fweights_empty", "(1)", "MPI_WEIGHTS_EMPTY"),
             ("MPI_STATUS_IGNORE", "vd_mpi_fstatus_ignore", "(MPI_STATUS_SIZE)",
              "MPI_STATUS_IGNORE"),
             ("MPI_STATUSES_IGNORE", "vd_mpi_fstatuses_ignore",
              "(MPI_STATUS_SIZE,1)", "MPI_STATUSES_IGNORE")]


class Arg:
    """One C parameter and how it crosses to Fortran."""

    def __init__(self, ctype, name, array, inner=""):
        self.ctype, self.name, self.array = ctype, name, array
        self.inner = inner              # "[3]" of int ranges[][3]
        base = ctype.replace("const", "").replace("*", "").strip()
        stars = ctype.count("*") + (1 if array else 0)
        self.base, self.stars = base, stars
        self.kind = self._classify()

    def _classify(self):
        b, s = self.base, self.stars
        if b == "void" and s == 1:
            return "choice"
        if b == "void" and s == 2:
            return "choice"
        if b == "char" and s == 1:
            return "string_in" if "const" in self.ctype else "string_out"
        if b == "MPI_Status" and s == 1:
            return "status"
        # Functions Fortran passes as they are: the C types already take
        # every argument by reference.
        if b in ("MPI_User_function", "MPI_Comm_errhandler_function",
                 "MPI_Handler_function", "MPI_Win_errhandler_function") and s == 1:
            return "userfn"
        if b in WIDE_TYPES:
            return "wide_val" if s == 0 else "wide_ref"
        if b in ("int",) or b in HANDLE_TYPES:
            if s == 0:
                return "int_val"
            if s == 1:
                return "int_ref"
        return None


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def parse_args(argtext):
    argtext = " ".join(argtext.split())
    if argtext in ("", "void"):
        return []
    out = []
    for a in argtext.split(","):
        a = a.strip()
        m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)$", a)
        if not m:
            return None
        ctype, name, dims = m.group(1).strip(), m.group(2), m.group(3)
        # int ranges[][3] is an array of ints to Fortran as to C's ABI
        inner = dims[dims.index("]") + 1:] if dims else ""
        out.append(Arg(ctype, name, bool(dims), inner))
    return out


def parse_functions(text):
    """(ret, name, args-or-None) for every MPI_ prototype before PMPI_."""
    body = strip_comments(text)
    funcs = []
    pat = re.compile(r"^(int|double|MPI_Aint|MPI_Fint)\s+(MPI_\w+)\s*\(([^;]*)\)\s*;", re.M | re.S)
    for m in pat.finditer(body):
        funcs.append((m.group(1), m.group(2), parse_args(m.group(3))))
    return funcs


def parse_constants(text):
    """name -> int for every integer-valued #define MPI_*."""
    raw = {}
    for line in strip_comments(text).splitlines():
        m = re.match(r"^#define\s+(MPI_\w+)\s+(.+?)\s*$", line)
        if m:
            raw[m.group(1)] = m.group(2)
    vals = {}

    def value(name, depth=0):
        v = raw[name].strip()
        while v.startswith("(") and v.endswith(")") and depth < 8:
            inner = v[1:-1].strip()
            cast = re.match(r"^\((MPI_\w+|int)\)\s*(.*)$", inner)
            if cast and cast.group(1) != "void":
                v = cast.group(2).strip()
            elif re.match(r"^-?\s*(0x[0-9a-fA-F]+|\d+)$", inner):
                v = inner
            else:
                break
        m = re.match(r"^(-?)\s*(0x[0-9a-fA-F]+|\d+)$", v)
        if m:
            n = int(m.group(2), 0)
            return -n if m.group(1) else n
        if v in raw and depth < 8:
            return value(v, depth + 1)
        return None

    for name in raw:
        v = value(name)
        if v is not None and -2**31 <= v < 2**31:
            vals[name] = v
    return vals


# ---- mpif.h / module constants -------------------------------------------

def fixed_lines(decls):
    """Declarations as lines valid in fixed form (column 7, at most 72
    characters: fixed form drops the rest without a word) and free form."""
    lines = ["      " + d for d in decls]
    for line in lines:
        if len(line) > 72:
            sys.exit("gen_bindings.py: line too long for fixed form: " + line)
    return lines


def constant_decls(consts):
    decls = []
    for name, k in KINDS:
        decls += ["INTEGER %s" % name, "PARAMETER (%s=%d)" % (name, k)]
    decls += ["INTEGER MPI_STATUS_SIZE", "PARAMETER (MPI_STATUS_SIZE=%d)" % STATUS_SIZE]
    for name, idx in STATUS_FIELDS:
        decls += ["INTEGER %s" % name, "PARAMETER (%s=%d)" % (name, idx)]
    for name in sorted(consts):
        if name in ("MPI_SOURCE", "MPI_TAG", "MPI_ERROR", "MPI_STATUS_SIZE"):
            continue
        decls += ["INTEGER %s" % name, "PARAMETER (%s=%d)" % (name, consts[name])]
    for fname, sym, dims, _ in SENTINELS:
        decls += ["INTEGER %s%s" % (fname, dims), "COMMON /%s/ %s" % (sym, fname)]
    return decls


def ftype_of_return(ret):
    if ret == "double":
        return "DOUBLE PRECISION"
    if ret in WIDE_TYPES:
        return "INTEGER(KIND=%s)" % WIDE_TYPES[ret]
    return None


def write_mpif(path, consts, funcs, skipped):
    lines = ["! mpif.h -- viaduct MPI for Fortran (generated from mpi.h by",
             "! src/fortran/gen_bindings.py; do not edit).  Valid in fixed and",
             "! free form source."]
    if skipped:
        lines.append("! Without a Fortran binding (C callbacks):")
        for name in skipped:
            lines.append("!   " + name)
    decls = constant_decls(consts)
    for ret, name, _ in funcs:
        ft = ftype_of_return(ret)
        if ft:
            for p in ("", "P"):
                decls += ["%s %s%s" % (ft, p, name), "EXTERNAL %s%s" % (p, name)]
    lines += fixed_lines(decls)
    write(path, "\n".join(lines) + "\n")


def fortran_dummy(arg):
    """The Fortran declaration of one dummy argument."""
    k, n = arg.kind, arg.name
    if k == "choice":
        return ["!GCC$ ATTRIBUTES NO_ARG_CHECK :: %s" % n, "REAL, DIMENSION(*) :: %s" % n]
    if k in ("string_in", "string_out"):
        return ["CHARACTER(LEN=*) :: %s" % n]
    if k == "status":
        return ["INTEGER :: %s(MPI_STATUS_SIZE, *)" % n if is_statuses(arg)
                else "INTEGER :: %s(MPI_STATUS_SIZE)" % n]
    if k == "userfn":
        return ["EXTERNAL :: %s" % n]
    if k in ("attr_in", "attr_out"):
        return ["INTEGER(KIND=MPI_ADDRESS_KIND) :: %s" % n]
    if k in ("wide_val", "wide_ref"):
        t = "INTEGER(KIND=%s)" % WIDE_TYPES[arg.base]
    elif n in LOGICAL_NAMES:
        t = "LOGICAL"
    else:
        t = "INTEGER"
    if arg.array or (k == "int_ref" and arg.stars > 1):
        return ["%s :: %s(*)" % (t, n)]
    return ["%s :: %s" % (t, n)]


def is_statuses(arg):
    return arg.array or "statuses" in arg.name


def fortran_args(args):
    return [a for a in args if a.name not in ("argc", "argv")]


def write_module(path, consts, funcs):
    out = ["! mpi.f90 -- the `mpi` module of viaduct MPI (generated from mpi.h",
           "! by src/fortran/gen_bindings.py; do not edit).",
           "MODULE mpi", "IMPLICIT NONE"]
    out += fixed_lines(constant_decls(consts))
    out.append("INTERFACE")
    for ret, name, args in funcs:
        for p in ("", "P"):
            out += interface(ret, p + name, fortran_args(args))
    out += ["END INTERFACE", "END MODULE mpi"]
    write(path, "\n".join(out) + "\n")


def interface(ret, name, args):
    names = [a.name for a in args]
    ft = ftype_of_return(ret)
    if ft:
        head = "%s FUNCTION %s(%s)" % (ft, name, ", ".join(names))
        end = "END FUNCTION %s" % name
    else:
        names.append("ierror")
        head = "SUBROUTINE %s(%s)" % (name, ", ".join(names))
        end = "END SUBROUTINE %s" % name
    # IMPORT: the kinds and MPI_STATUS_SIZE of the enclosing module.
    body = ["  IMPORT", "  IMPLICIT NONE"]
    head = wrap_free(head)
    for a in args:
        body += ["  " + d for d in fortran_dummy(a)]
    if not ft:
        body.append("  INTEGER :: ierror")
    return head + body + [end]


def wrap_free(line, width=100):
    """A free-form statement as lines under the 132-column limit."""
    out, cur = [], ""
    for word in line.split(" "):
        if cur and len(cur) + len(word) + 1 > width:
            out.append(cur + " &")
            cur = "    " + word
        else:
            cur = cur + " " + word if cur else word
    return out + [cur]


# ---- C wrappers -------------------------------------------------------------

def c_params(args):
    ps, lens = [], []
    for a in args:
        if a.kind == "choice":
            ps.append("void *%s" % a.name)
        elif a.kind in ("string_in", "string_out"):
            ps.append("char *%s" % a.name)
            lens.append("size_t %s_len" % a.name)
        elif a.kind == "status":
            ps.append("MPI_Fint *%s" % a.name)
        elif a.kind == "userfn":
            ps.append("%s *%s" % (a.base, a.name))
        elif a.kind in ("wide_val", "wide_ref"):
            ps.append("%s *%s" % (a.base, a.name))
        elif a.kind in ("attr_in", "attr_out"):
            ps.append("MPI_Aint *%s" % a.name)
        else:
            ps.append("MPI_Fint *%s" % a.name)
    return ps, lens


def c_call_arg(a, ctype_of):
    k, n = a.kind, a.name
    if k == "choice":
        return "vd_fbuf(%s)" % n
    if k == "attr_in":
        return "(void *)(intptr_t)*%s" % n
    if k == "attr_out":
        return "&c_%s" % n
    if k == "string_in":
        return "c_%s" % n
    if k == "string_out":
        return "c_%s" % n
    if k == "status":
        many = is_statuses(a)
        return "vd_fstatus%s(%s)" % ("es" if many else "", n)
    if k == "userfn":
        return n
    if k == "wide_val":
        return "*%s" % n
    if k == "wide_ref":
        return "(%s)%s" % (ctype_of(a), n)
    if k == "int_val":
        return "(%s)*%s" % (a.base, n)
    if n.endswith("weights"):   # may be MPI_UNWEIGHTED or MPI_WEIGHTS_EMPTY
        return "vd_fweights(%s)" % n
    return "(%s)%s" % (ctype_of(a), n)


def c_wrapper(ret, name, args):
    fargs = fortran_args(args)
    lower = name.lower()
    ps, lens = c_params(fargs)
    is_fn = ret != "int"
    params = ps + ([] if is_fn else ["MPI_Fint *ierror"]) + lens
    sig = "%s p%s_(%s)" % ("MPI_Fint" if ret == "MPI_Fint" else ret if is_fn else "void",
                           lower, ", ".join(params) or "void")
    lines = ["#pragma weak %s_ = p%s_" % (lower, lower), sig + ";", sig, "{"]
    pre, post = [], []
    for a in fargs:
        if a.kind == "string_in":
            pre.append("\tchar *c_%s = vd_fstr_in(%s, %s_len);" % (a.name, a.name, a.name))
            post.append("\tfree(c_%s);" % a.name)
        elif a.kind == "string_out":
            pre.append("\tchar *c_%s = vd_fstr_buf(%s_len);" % (a.name, a.name))
            post.insert(0, "\tvd_fstr_out(%s, %s_len, c_%s);" % (a.name, a.name, a.name))
            post.append("\tfree(c_%s);" % a.name)
        elif a.kind == "attr_out":
            # The predefined attributes point to their values: Fortran
            # gets the value (vd_fattr_value).
            obj = name.split("_")[1].lower()
            keyval = [b.name for b in fargs if b.name.endswith("keyval")][0]
            pre.append("\tvoid *c_%s = NULL;" % a.name)
            post.insert(0, "\tif (rc == MPI_SUCCESS && *flag)\n\t\t*%s = vd_fattr_value_%s((int)*%s, c_%s);"
                        % (a.name, obj, keyval, a.name))
    strs = [a.name for a in fargs if a.kind in ("string_in", "string_out")]
    call_args = []
    if name in ("MPI_Init", "MPI_Init_thread"):
        call_args = ["NULL", "NULL"]
    call_args += [c_call_arg(a, ctype_of) for a in fargs]
    call = "%s(%s)" % (name, ", ".join(call_args))
    lines += pre
    if strs:
        cond = " || ".join("!c_%s" % s for s in strs)
        lines.append("\tint rc = (%s) ? MPI_ERR_NO_MEM : %s;" % (cond, call) if not is_fn
                     else "\t%s rc = %s;" % (ret, call))
    elif is_fn:
        lines.append("\t%s rc = %s;" % (ret, call))
    else:
        lines.append("\tint rc = %s;" % call)
    for a in fargs:
        if a.name in LOGICAL_NAMES and a.kind == "int_ref" and not a.array \
                and "const" not in a.ctype:
            lines.append("\tif (rc == MPI_SUCCESS) *%s = *%s != 0;" % (a.name, a.name))
    lines += post
    lines.append("\treturn rc;" if is_fn else "\t*ierror = rc;")
    lines.append("}")
    return lines


def ctype_of(a):
    if a.inner:
        return "%s (*)%s" % (a.base, a.inner)
    return "%s *" % a.base


def write_c(path, funcs):
    out = ["/* SPDX-License-Identifier: MIT */",
           "/* Fortran bindings of viaduct MPI: generated from mpi.h by",
           " * src/fortran/gen_bindings.py -- do not edit. */",
           '#include "fortran_glue.h"', ""]
    for ret, name, args in funcs:
        if name not in HANDWRITTEN:
            out += c_wrapper(ret, name, args) + [""]
    write(path, "\n".join(out))


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        text = f.read()
    # Only the MPI_ section: PMPI_ declarations repeat it.
    consts = parse_constants(text)
    funcs, skipped = [], []
    for ret, name, args in parse_functions(text):
        if C_ONLY.match(name):
            continue
        if args is not None and ATTR_FUNCS.match(name):
            for a in args:
                if a.name == "attribute_val":
                    a.kind = "attr_out" if "_get_" in name else "attr_in"
        if args is None or any(a.kind is None for a in fortran_args(args)):
            skipped.append(name)
            continue
        funcs.append((ret, name, args))
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    write_mpif(os.path.join(outdir, "mpif.h"), consts, funcs, skipped)
    write_module(os.path.join(outdir, "mpi.f90"), consts, funcs)
    write_c(os.path.join(outdir, "mpi_fortran.c"), funcs)


if __name__ == "__main__":
    main()
