//! Client commands (`netcache server …`, `netcache interface …`): a small HTTP
//! client of the compute API with table or JSON output.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

pub struct ApiClient {
    base: String,
    project: Option<String>,
    token: Option<String>,
    http: reqwest::Client,
}

impl ApiClient {
    pub fn new(base: &str, project: Option<String>, token: Option<String>) -> anyhow::Result<Self> {
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            project,
            token,
            http: reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?,
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let url = format!("{}/v2.1{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(project) = &self.project {
            request = request.header("X-Project-Id", project);
        }
        if let Some(token) = &self.token {
            request = request.header("X-Auth-Token", token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach netcache at {} (is `netcache serve` running?)", self.base))?;
        let status = response.status();
        let text = response.text().await?;
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if !status.is_success() {
            let message = value
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map_or_else(|| value.to_string(), str::to_owned);
            bail!("{method} {path} failed: HTTP {}: {message}", status.as_u16());
        }
        Ok(value)
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        self.call(reqwest::Method::DELETE, path, None).await.map(|_| ())
    }

    /// Polls a server until it leaves BUILD, printing progress on stderr.
    pub async fn wait_until_built(&self, id: &str) -> anyhow::Result<Value> {
        for tick in 0.. {
            let server = self.get(&format!("/servers/{id}")).await?["server"].take();
            if server["status"] != "BUILD" {
                if tick > 0 {
                    eprintln!();
                }
                return Ok(server);
            }
            eprint!("\rwaiting for server {id} to build{}", ".".repeat(tick % 4 + 1));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        unreachable!("the loop only ends by returning")
    }
}

/// `addresses` as `net=ip, ip; net2=ip` (the openstack CLI's style).
pub fn format_addresses(addresses: &Value) -> String {
    addresses
        .as_object()
        .map(|nets| {
            nets.iter()
                .map(|(label, ips)| {
                    let ips: Vec<&str> = ips
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|ip| ip["addr"].as_str())
                        .collect();
                    format!("{label}={}", ips.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

/// Prints rows as an aligned table with a header.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    println!("{}", line(headers.iter().map(|h| (*h).to_owned()).collect()));
    println!("{}", line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        println!("{}", line(row.clone()));
    }
}

pub fn print(output: Output, value: &Value, table: impl FnOnce(&Value)) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(value).unwrap_or_default()),
        Output::Table => table(value),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn print_servers(output: Output, servers: &Value) {
    print(output, servers, |v| {
        let rows: Vec<Vec<String>> = v["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                vec![
                    text(&s["id"]),
                    text(&s["name"]),
                    text(&s["status"]),
                    format_addresses(&s["addresses"]),
                    text(&s["OS-EXT-SRV-ATTR:host"]),
                ]
            })
            .collect();
        print_table(&["ID", "Name", "Status", "Networks", "Host"], &rows);
    });
}

pub fn print_server(output: Output, server: &Value) {
    print(output, server, |s| {
        let mut rows = vec![
            vec!["id".into(), text(&s["id"])],
            vec!["name".into(), text(&s["name"])],
            vec!["status".into(), text(&s["status"])],
            vec!["host".into(), text(&s["OS-EXT-SRV-ATTR:host"])],
            vec!["addresses".into(), format_addresses(&s["addresses"])],
            vec!["project".into(), text(&s["tenant_id"])],
            vec!["created".into(), text(&s["created"])],
        ];
        if let Some(fault) = s.get("fault") {
            rows.push(vec!["fault".into(), text(&fault["message"])]);
        }
        print_table(&["Field", "Value"], &rows);
    });
}

pub fn print_interfaces(output: Output, interfaces: &Value) {
    print(output, interfaces, |v| {
        let rows: Vec<Vec<String>> = v["interfaceAttachments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                let ips: Vec<String> = i["fixed_ips"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| text(&f["ip_address"]))
                    .collect();
                vec![
                    text(&i["port_id"]),
                    text(&i["net_id"]),
                    ips.join(", "),
                    text(&i["mac_addr"]),
                    text(&i["port_state"]),
                ]
            })
            .collect();
        print_table(&["Port ID", "Net ID", "IP addresses", "MAC address", "State"], &rows);
    });
}

/// The body of `POST /servers` from CLI flags.
pub fn create_body(
    name: &str,
    flavor: &str,
    image: &str,
    networks: &[String],
    ports: &[String],
    fixed_ip: Option<&str>,
) -> Value {
    let nets: Vec<Value> = if networks.is_empty() && ports.is_empty() {
        return json!({"server": {"name": name, "flavorRef": flavor, "imageRef": image, "networks": "auto"}});
    } else {
        networks
            .iter()
            .enumerate()
            .map(|(i, n)| match (i, fixed_ip) {
                (0, Some(ip)) => json!({"uuid": n, "fixed_ip": ip}),
                _ => json!({"uuid": n}),
            })
            .chain(ports.iter().map(|p| json!({"port": p})))
            .collect()
    };
    json!({"server": {"name": name, "flavorRef": flavor, "imageRef": image, "networks": nets}})
}
