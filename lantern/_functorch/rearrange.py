"""torch.func.rearrange: einops-style reshaping by a pattern of named axes.

`"b (h w) c -> b h w c"` names each axis of the input (a parenthesised group is one dim made of several axes,
whose lengths come from `axes_lengths` where the shape cannot tell), and says in which order and groups the
result has them; `...` stands for any axes in between. A list or tuple of tensors is stacked first.

>>> import lantern
>>> rearrange(lantern.arange(6).reshape(2, 3), "a b -> b a")
tensor([[0, 3],
        [1, 4],
        [2, 5]])
>>> rearrange(lantern.arange(6), "(a b) -> a b", b=2).shape
lantern.Size([3, 2])
"""
import re
import lantern

_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*")


def _groups(side):
    """'b (h w) ...' -> [['b'], ['h', 'w'], ['...']]"""
    groups, current = [], None
    for token in _TOKEN.findall(side):
        if token == "(":
            if current is not None:
                raise ValueError(f"rearrange: nested parentheses in '{side}'")
            current = []
        elif token == ")":
            if current is None:
                raise ValueError(f"rearrange: unbalanced parentheses in '{side}'")
            groups.append(current)
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    if current is not None:
        raise ValueError(f"rearrange: unbalanced parentheses in '{side}'")
    return groups


def rearrange(tensor, pattern, **axes_lengths):
    if isinstance(tensor, (list, tuple)):
        tensor = lantern.stack(list(tensor))
    left_text, arrow, right_text = pattern.partition("->")
    if not arrow:
        raise ValueError(f"rearrange: pattern '{pattern}' has no '->'")
    left, right = _groups(left_text), _groups(right_text)
    left_names = [n for g in left for n in g]
    right_names = [n for g in right for n in g]
    if sorted(left_names) != sorted(right_names) or len(set(left_names)) != len(left_names):
        raise ValueError(f"rearrange: each axis must appear once on each side of '{pattern}'")
    lengths = _axis_lengths(tensor, left, pattern, left_text, axes_lengths)

    def sizes(names):
        return [s for n in names for s in (lengths[n] if n == "..." else (lengths[n],))]

    elementary = tensor.reshape(sizes(left_names))
    position, at = {}, 0
    for n in left_names:
        count = len(lengths["..."]) if n == "..." else 1
        position[n] = list(range(at, at + count))
        at += count
    permuted = elementary.permute([p for n in right_names for p in position[n]])
    return permuted.reshape([s for group in right for s in _group_sizes(group, sizes(group))])


def _group_sizes(group, sizes):
    """The result's dims for one group on the right: '...' keeps its dims, any other group is one dim."""
    if group == ["..."]:
        return sizes
    size = 1
    for s in sizes:
        size *= s
    return [size]


def _axis_lengths(tensor, left, pattern, left_text, axes_lengths):
    """{axis name: length} for every axis on the left, and '...': the dims it stands for."""
    ellipsis_dims = tensor.dim() - (len(left) - (1 if ["..."] in left else 0))
    if ellipsis_dims < 0 or (all("..." not in g for g in left) and ellipsis_dims != 0):
        raise ValueError(f"rearrange: pattern '{left_text.strip()}' does not fit a tensor of {tensor.dim()} dims")
    lengths, dim = {}, 0
    for group in left:
        if group == ["..."]:
            lengths["..."] = tuple(tensor.shape[dim:dim + ellipsis_dims])
            dim += ellipsis_dims
            continue
        total = tensor.shape[dim]
        unknown = [n for n in group if n not in axes_lengths]
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot tell the lengths of {unknown} in '{pattern}'")
        known = 1
        for n in group:
            if n in axes_lengths:
                lengths[n] = axes_lengths[n]
                known *= axes_lengths[n]
        if unknown:
            lengths[unknown[0]] = total // known
        elif known != total:
            raise ValueError(f"rearrange: axes {group} of lengths {[lengths[n] for n in group]} do not make dim "
                             f"{dim} of length {total}")
        dim += 1
    return lengths
