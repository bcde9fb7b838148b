import http from 'node:http';

/** A plain GET over a real socket: status and the whole body as text (no client-side limits, for tests). */
export function getText(url: string | http.RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}
