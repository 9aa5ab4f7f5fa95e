//! Resource and node-preference priorities: least/most requested, balanced allocation, requested-to-capacity ratio, resource limits, image locality, prefer-avoid-pods, equal.
