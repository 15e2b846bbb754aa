"""Where PyTorch's CPU kernels leave equal elements: the orders of libstdc++'s std::sort, std::partial_sort and
std::nth_element, and of ATen's quick-select, reproduced step by step.

sort (stable=False), topk, kthvalue and mode hand (value, index) pairs to these algorithms with a comparator on the
value alone, so equal values come out in an order the algorithm decides, not in index order: a sort of 17 equal
values is not the identity. NumPy has no such sort; these functions run the same steps in Python on a list of keys
(anything `<` orders as the comparator does) and return the indices in the order the algorithm leaves them.

Where a slice has no two equal keys every correct sort gives the same order, so callers use these only on slices
with ties (see `has_ties`).

>>> std_sort([1, 0, 1, 0] * 5)[:10]   # torch.tensor([1, 0, 1, 0] * 5).sort().indices[:10]
[1, 19, 17, 15, 13, 11, 9, 7, 5, 3]
>>> aten_quick_select([2, 2, 2, 1], 2)  # torch.tensor([2, 2, 2, 1]).kthvalue(3).indices
2
"""
import numpy as np

INSERTION_THRESHOLD = 16  # libstdc++'s _S_threshold: introsort leaves runs this short to one insertion sort


def has_ties(xp, keys, axis):
    """Whether each slice of the integer `keys` along `axis` holds two equal keys, as a boolean array."""
    ordered = xp.sort(keys, axis=axis)
    n = ordered.shape[axis]
    return (xp.take(ordered, range(1, n), axis=axis) == xp.take(ordered, range(n - 1), axis=axis)).any(axis=axis)


def ranks(xp, values, descending=False):
    """Integer keys that order `values` as ATen's sort comparators do: NaN above every number and equal to every
    NaN, -0.0 equal to 0.0; negated for a descending comparator."""
    orderable = values.astype(np.float32) if values.dtype.kind == "V" else values  # bfloat16: NumPy cannot order it
    inverse = xp.unique(orderable, return_inverse=True)[1].reshape(values.shape)
    return -inverse if descending else inverse


# ---- the building blocks, on a list of [key, index] pairs -----------------------------------------------------

def _insertion_sort(a, first, last):
    """std::__insertion_sort: stable; an element smaller than the first goes to the front in one move."""
    for i in range(first + 1, last):
        item = a[i]
        if item[0] < a[first][0]:
            a[first + 1:i + 1] = a[first:i]
            a[first] = item
        else:
            _linear_insert(a, i)


def _linear_insert(a, i):
    """std::__unguarded_linear_insert: move a[i] left past the elements greater than it."""
    item = a[i]
    while item[0] < a[i - 1][0]:
        a[i] = a[i - 1]
        i -= 1
    a[i] = item


def _median_to_first(a, result, x, y, z):
    """std::__move_median_to_first: swap the median of a[x], a[y], a[z] into a[result]."""
    kx, ky, kz = a[x][0], a[y][0], a[z][0]
    if kx < ky:
        median = y if ky < kz else (z if kx < kz else x)
    else:
        median = x if kx < kz else (z if ky < kz else y)
    a[result], a[median] = a[median], a[result]


def _partition(a, first, last):
    """std::__unguarded_partition_pivot: median-of-three pivot moved to a[first], then Hoare's partition of
    a[first+1:last] around it; returns the cut. The scans are kept inside the range: with a comparator that is a
    strict weak order (every one here but mode's NaN) they never reach its ends anyway."""
    _median_to_first(a, first, first + 1, first + (last - first) // 2, last - 1)
    pivot = a[first][0]
    left, right = first + 1, last
    while True:
        while left < last - 1 and a[left][0] < pivot:
            left += 1
        right -= 1
        while right > first and pivot < a[right][0]:
            right -= 1
        if not left < right:
            return left
        a[left], a[right] = a[right], a[left]
        left += 1


def _sift_down(a, first, hole, length, item):
    """std::__adjust_heap: move the hole at `hole` down to a leaf along larger children, then push `item` up."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if a[first + child][0] < a[first + child - 1][0]:
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and a[first + parent][0] < item[0]:
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = item


def _make_heap(a, first, last):
    length = last - first
    for parent in range((length - 2) // 2, -1, -1):
        _sift_down(a, first, parent, length, a[first + parent])


def _pop_heap(a, first, last, result):
    """std::__pop_heap: the heap's top goes to a[result], a[result]'s old item is sifted into the heap."""
    item = a[result]
    a[result] = a[first]
    _sift_down(a, first, 0, last - first, item)


def _heap_select(a, first, middle, last):
    """std::__heap_select: a[first:middle] becomes a max-heap of the smallest middle-first items."""
    _make_heap(a, first, middle)
    for i in range(middle, last):
        if a[i][0] < a[first][0]:
            _pop_heap(a, first, middle, i)


def _sort_heap(a, first, last):
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last)


def _introsort_loop(a, first, last, depth_limit):
    """Quicksort down to runs of INSERTION_THRESHOLD, heapsort where the recursion gets 2*log2(n) deep."""
    while last - first > INSERTION_THRESHOLD:
        if depth_limit == 0:
            _heap_select(a, first, last, last)
            _sort_heap(a, first, last)
            return
        depth_limit -= 1
        cut = _partition(a, first, last)
        _introsort_loop(a, cut, last, depth_limit)
        last = cut


def _sort_pairs(a, first, last):
    """std::sort on a[first:last]: introsort, then one insertion sort over the whole range."""
    if last - first < 2:
        return
    _introsort_loop(a, first, last, 2 * ((last - first).bit_length() - 1))
    if last - first > INSERTION_THRESHOLD:
        _insertion_sort(a, first, first + INSERTION_THRESHOLD)
        for i in range(first + INSERTION_THRESHOLD, last):
            _linear_insert(a, i)
    else:
        _insertion_sort(a, first, last)


def _pairs(keys):
    return [[key, index] for index, key in enumerate(keys)]


# ---- the algorithms ---------------------------------------------------------------------------------------------

def std_sort(keys):
    """The indices of `keys` in the order std::sort(pairs, by key) leaves them."""
    a = _pairs(keys)
    _sort_pairs(a, 0, len(a))
    return [index for _, index in a]


def std_partial_sort(keys, k):
    """The first k indices after std::partial_sort(pairs, pairs + k, by key): a heap selection, then a heap sort."""
    a = _pairs(keys)
    _heap_select(a, 0, k, len(a))
    _sort_heap(a, 0, k)
    return [index for _, index in a[:k]]


def std_nth_element(keys, nth, sort_before_nth=False):
    """The indices in the order std::nth_element(pairs, pairs + nth, by key) leaves them (introselect); with
    `sort_before_nth`, the first nth are then put through std::sort, as ATen's topk does when sorted=True."""
    a = _pairs(keys)
    first, last = 0, len(a)
    if nth >= last:
        return [index for _, index in a]
    depth_limit = 2 * (last.bit_length() - 1)
    while last - first > 3:
        if depth_limit == 0:
            _heap_select(a, first, nth + 1, last)
            a[first], a[nth] = a[nth], a[first]
            break
        depth_limit -= 1
        cut = _partition(a, first, last)
        first, last = (cut, last) if cut <= nth else (first, cut)
    else:
        _insertion_sort(a, first, last)
    if sort_before_nth:
        _sort_pairs(a, 0, nth)
    return [index for _, index in a]


def aten_quick_select(keys, k):
    """The index ATen's quick_select_template (kthvalue's selection: median-of-three, then Hoare's scheme with
    the comparator `greater`) leaves at position k."""
    a = _pairs(keys)

    def swap(i, j):
        a[i], a[j] = a[j], a[i]

    low, high = 0, len(a) - 1
    while high > low:
        if high == low + 1:
            if a[low][0] > a[high][0]:
                swap(low, high)
            break
        swap(low + (high - low) // 2, low + 1)
        if a[low + 1][0] > a[high][0]:
            swap(low + 1, high)
        if a[low][0] > a[high][0]:
            swap(low, high)
        if a[low + 1][0] > a[low][0]:
            swap(low + 1, low)
        i, j, pivot = low + 1, high, a[low][0]
        while True:
            i += 1
            while pivot > a[i][0]:
                i += 1
            j -= 1
            while a[j][0] > pivot:
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(low, j)
        if j <= k:
            low = i
        if j >= k:
            high = j - 1
    return a[k][1]
