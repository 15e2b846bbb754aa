"""Exit transform for the script frontend: rewrite a function's AST so `return`, `break`, `continue` and `raise`
only ever end a statement list (torch's ExitTransforms, done on the Python AST).

After `transform`, the statements that follow an `if` which may exit are moved into the branches' fall-through
ends, and a `return` inside a loop becomes `__ret_val__ = v; __ret_flag__ = True; break` with a check after the
loop. The emitter then only meets exits at the leaves of if-trees, where they become block outputs.

>>> import ast
>>> tree = ast.parse("def f(x):\\n    if x:\\n        return 1\\n    y = 2\\n    return y")
>>> print(ast.unparse(transform(tree.body[0].body)[0]))
if x:
    return 1
else:
    y = 2
    return y
"""
import ast
import copy

RET_FLAG = "__ret_flag__"
RET_VAL = "__ret_val__"
UNINITIALIZED = "__jit_uninitialized__"
_EXITS = (ast.Return, ast.Break, ast.Continue, ast.Raise)


def exit_kind(stmts):
    """'always', 'never' or 'maybe': whether a transformed statement list leaves by an exit statement."""
    if not stmts:
        return "never"
    last = stmts[-1]
    if isinstance(last, _EXITS):
        return "always"
    if isinstance(last, ast.If):
        kinds = {exit_kind(last.body), exit_kind(last.orelse)}
        return kinds.pop() if len(kinds) == 1 else "maybe"
    return "never"


def _append_fallthrough(stmts, rest):
    """stmts with a copy of `rest` added at every end through which control falls out of the list."""
    kind = exit_kind(stmts)
    if kind == "always":
        return stmts
    if kind == "never":
        return stmts + copy.deepcopy(rest)
    last = stmts[-1]
    last.body = _append_fallthrough(last.body, rest)
    last.orelse = _append_fallthrough(last.orelse, rest)
    return stmts


def _replace_returns(stmts):
    """Inside a loop body: each tail `return v` becomes `__ret_val__ = v; __ret_flag__ = True; break`."""
    if not stmts:
        return stmts
    last = stmts[-1]
    if isinstance(last, ast.Return):
        value = last.value if last.value is not None else ast.Constant(None)
        new = [ast.Assign([ast.Name(RET_VAL, ast.Store())], value),
               ast.Assign([ast.Name(RET_FLAG, ast.Store())], ast.Constant(True)), ast.Break()]
        for n in new:
            ast.copy_location(n, last)
            ast.fix_missing_locations(n)
        return stmts[:-1] + new
    if isinstance(last, ast.If):
        last.body = _replace_returns(last.body)
        last.orelse = _replace_returns(last.orelse)
    return stmts


def _has_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


def _loop(stmt):
    """A loop, its body transformed; with returns inside, the flag set-up and the check after it."""
    stmt.body = transform(stmt.body)
    if not _has_return(stmt.body):
        return [stmt]
    stmt.body = _replace_returns(stmt.body)
    before = [ast.Assign([ast.Name(RET_FLAG, ast.Store())], ast.Constant(False)),
              ast.Assign([ast.Name(RET_VAL, ast.Store())],
                         ast.Call(ast.Name(UNINITIALIZED, ast.Load()), [], []))]
    after = ast.If(ast.Name(RET_FLAG, ast.Load()), [ast.Return(ast.Name(RET_VAL, ast.Load()))], [])
    out = before + [stmt, after]
    for n in out:
        ast.copy_location(n, stmt)
        ast.fix_missing_locations(n)
    return out


def transform(stmts):
    """The exit-transformed copy of a statement list (see the module docstring)."""
    stmts = list(stmts)
    out = []
    i = 0
    while i < len(stmts):
        s = stmts[i]
        if isinstance(s, (ast.For, ast.While)) and not getattr(s, "_exits_done", False):
            s._exits_done = True
            stmts[i:i + 1] = _loop(s)
            continue
        if isinstance(s, ast.If):
            s.body, s.orelse = transform(s.body), transform(s.orelse)
            kind = exit_kind([s])
            if kind == "always":
                out.append(s)
                return out
            if kind == "maybe":
                rest = transform(stmts[i + 1:])
                if rest:
                    s.body = _append_fallthrough(s.body, rest)
                    s.orelse = _append_fallthrough(s.orelse, rest)
                out.append(s)
                return out
        out.append(s)
        if isinstance(s, _EXITS):
            return out
        i += 1
    return out
