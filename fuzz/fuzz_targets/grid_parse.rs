//! Sweep grids: TOML files and `--sweep` specs, expanded up to a small maximum.
#![no_main]

use jitterlab_replay::grid::Grid;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let grid = match text.split_once('\n') {
        // A first line starting with `--sweep ` is a command-line spec.
        Some((first, _)) if first.starts_with("--sweep ") => {
            let mut grid = Grid::default();
            if grid.add_cli(&first["--sweep ".len()..]).is_err() {
                return;
            }
            grid
        }
        _ => match Grid::from_toml(text) {
            Ok(grid) => grid,
            Err(_) => return,
        },
    };
    if let Ok(policies) = grid.expand(2_000) {
        assert_eq!(policies.len(), grid.count());
    }
});
