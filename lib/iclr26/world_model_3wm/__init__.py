"""3WM (ICLR 2026): one probabilistic world model over RGB, flow and camera, with tasks
as inference pathways, at toy scale (a procedurally rendered 2.5-D tabletop).

``world``: the scene generator. ``geometry``: pinhole flow and depth, metrics,
classical baselines. ``tokens``: the patch quantizer and bins. ``model``: the
pointer-content GPT trained in random order. ``pathways``: the tasks.
"""

# ruff: noqa: F401 -- the package re-exports its modules' names
from .calibration import (
    DEPTH_ABLATION,
    GRID,
    RESULTS,
    SETTINGS,
    calibration_cell,
    calibration_table,
    depth_ablation_table,
)
from .geometry import (
    abs_rel,
    block_matching_flow,
    cut_and_paste,
    depth_from_disparity,
    depth_from_flow,
    disparity_from_depth,
    flow_from_depth,
    forward_warp,
    patch_mean,
    psnr,
    shift_rows,
    stereo_warp_gain,
)
from .identities import chain_rule_product, check_depth_from_flow
from .model import PointerContentGPT, group_orders, random_orders, raster_orders, train
from .pathways import (
    WorldModel,
    colour_centroid,
    depth_from_prior_flow,
    depth_from_true_flow_tokens,
    evaluate,
    fit_world_model,
    layout_prior,
    load_stereo_motorcycle,
    manipulation_condition,
    manipulation_hits,
    patch_depth,
    pathway_depth,
    pathway_depth_via_rgb,
    pathway_manipulate,
    pathway_nvs,
)
from .tokens import (
    Bins,
    CameraQuantizer,
    FlowQuantizer,
    Layout,
    PatchQuantizer,
    patchify,
    tokenize,
    unpatchify,
    value_features,
)
from .world import make_tabletop_batch, scene_constants
