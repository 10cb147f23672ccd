//! How value channels are interpolated (C14): position-like channels linearly, rotation
//! quaternions spherically.

/// Where a stream's rotation quaternion sits among its value channels: the first run of
/// channels named `qx, qy, qz, qw`.
pub fn rotation_channels(names: &[String]) -> Option<usize> {
    names
        .windows(4)
        .position(|w| w[0] == "qx" && w[1] == "qy" && w[2] == "qz" && w[3] == "qw")
}

/// Spherical linear interpolation between unit quaternions `a` and `b` (x, y, z, w) at `t`
/// along the shorter arc, as Unity's `Quaternion.SlerpUnclamped` (Mirror) and
/// `Quaternion.Slerp` (NGO) do; `t` outside [0, 1] extrapolates along the same arc. Nearly
/// parallel quaternions fall back to a normalised lerp.
pub fn slerp(a: [f64; 4], b: [f64; 4], t: f64) -> [f64; 4] {
    let mut b = b;
    let mut dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    if dot < 0.0 {
        b = b.map(|x| -x);
        dot = -dot;
    }
    let out = if dot > 0.9995 {
        [0, 1, 2, 3].map(|i| a[i] + (b[i] - a[i]) * t)
    } else {
        let theta = dot.min(1.0).acos();
        let s = theta.sin();
        let (wa, wb) = (((1.0 - t) * theta).sin() / s, (t * theta).sin() / s);
        [0, 1, 2, 3].map(|i| wa * a[i] + wb * b[i])
    };
    let norm = out.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 { out.map(|x| x / norm) } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaw(deg: f64) -> [f64; 4] {
        let h = deg.to_radians() / 2.0;
        [0.0, 0.0, h.sin(), h.cos()]
    }

    fn close(a: [f64; 4], b: [f64; 4]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    /// C14: rotation interpolates spherically: halfway between 0° and 90° of yaw is 45°, a
    /// unit quaternion (a linear blend would be 8 % short and turn at an uneven rate).
    #[test]
    fn c14_slerp_halfway_is_the_half_angle() {
        let mid = slerp(yaw(0.0), yaw(90.0), 0.5);
        assert!(close(mid, yaw(45.0)), "{mid:?}");
        let linear: f64 = [0, 1, 2, 3]
            .map(|i| (yaw(0.0)[i] + yaw(90.0)[i]) / 2.0)
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        assert!((linear - 0.924).abs() < 1e-3);
        // Even angular rate: a quarter of the way is 22.5°.
        assert!(close(slerp(yaw(0.0), yaw(90.0), 0.25), yaw(22.5)));
        // The shorter arc: from 170° to −170° passes through 180°, not 0°.
        let wrap = slerp(yaw(170.0), yaw(-170.0), 0.5);
        assert!(
            close(wrap, yaw(180.0)) || close(wrap, yaw(180.0).map(|x| -x)),
            "{wrap:?}"
        );
        // Unclamped: t = 1.5 continues to 135°.
        assert!(close(slerp(yaw(0.0), yaw(90.0), 1.5), yaw(135.0)));
    }

    #[test]
    fn finds_the_rotation_channels() {
        let names: Vec<String> = "x,y,z,qx,qy,qz,qw".split(',').map(String::from).collect();
        assert_eq!(rotation_channels(&names), Some(3));
        assert_eq!(rotation_channels(&names[..5]), None);
    }
}
